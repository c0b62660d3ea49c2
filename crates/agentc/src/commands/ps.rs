//! `agentc ps`: lists the containers agentc launched, with where their ports are reachable.

use std::fmt::Write as _;

use agentc_backend_api::Summary;
use agentc_policy::LABEL_KIND;

use crate::cli::PsArgs;
use crate::commands::launch;
use crate::context::Failure;

/// One row of `agentc ps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The container's name.
    pub name: String,
    /// Its `io.agentc.profile` label.
    pub profile: String,
    /// Its `io.agentc.kind` label.
    pub kind: String,
    /// The daemon's status, such as `Up 5 minutes`.
    pub status: String,
    /// Reachable `HOST:PORT` addresses of its published ports.
    pub addresses: Vec<String>,
}

/// Runs `agentc ps`: running containers only unless `--all`.
pub fn ps(args: PsArgs) -> Result<u8, Failure> {
    let runtime = launch::runtime()?;
    let rows = runtime.block_on(async {
        let docker = launch::connect().await?;
        let summaries = agentc_backend_api::list(&docker, None)
            .await
            .map_err(launch::exec_failure)?;
        let mut rows = Vec::new();
        for summary in summaries {
            if !args.all && summary.state != "running" {
                continue;
            }
            let addresses = agentc_backend_api::reachable(&docker, &summary.id)
                .await
                .into_iter()
                .map(|address| address.address)
                .collect();
            rows.push(row(summary, addresses));
        }
        Ok::<_, Failure>(rows)
    })?;
    print!("{}", render(&rows));
    Ok(0)
}

fn row(summary: Summary, addresses: Vec<String>) -> Row {
    Row {
        kind: summary.labels.get(LABEL_KIND).cloned().unwrap_or_default(),
        name: summary.name,
        profile: summary.profile,
        status: summary.status,
        addresses,
    }
}

/// The table: `NAME  PROFILE  KIND  STATUS  ADDRESSES`, addresses comma-separated.
pub fn render(rows: &[Row]) -> String {
    let headers = ["NAME", "PROFILE", "KIND", "STATUS", "ADDRESSES"];
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|row| {
            [
                row.name.clone(),
                row.profile.clone(),
                row.kind.clone(),
                row.status.clone(),
                row.addresses.join(", "),
            ]
        })
        .collect();
    let mut widths = headers.map(str::len);
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = headers.map(str::to_string);
    for row in std::iter::once(&header).chain(&cells) {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(widths) {
            let _ = write!(line, "{cell:<width$}  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_aligns_columns_and_joins_addresses() {
        let rows = vec![Row {
            name: "agentc-sandbox-dev-1000-pentest".into(),
            profile: "pentest".into(),
            kind: "sandbox".into(),
            status: "Up 2 seconds".into(),
            addresses: vec!["127.0.0.1:49153".into(), "172.20.0.5:8080".into()],
        }];
        assert_eq!(
            render(&rows),
            "NAME                             PROFILE  KIND     STATUS        ADDRESSES\n\
             agentc-sandbox-dev-1000-pentest  pentest  sandbox  Up 2 seconds  127.0.0.1:49153, 172.20.0.5:8080\n"
        );
    }
}
