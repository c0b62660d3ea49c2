//! `agentc ps`: lists the containers agentc launched, with their network, where each port is
//! reachable, the state of their egress proxy (for a sandbox behind one), their spec digest and
//! whether their profile changed since; `--volumes` lists agentc's volumes too. The listing is
//! the library's ([`agentc_host::inventory::List`]); this module prints it.

use agentc_engine::companion::state::EgressState;
use agentc_host::inventory::{Filters, List, Row};

use crate::cli::{PsArgs, PsFormat};
use crate::commands::session::on_client;
use crate::context::Failure;
use crate::table::table;

/// The ID `ps -q` prints: the first 12 characters, as `docker ps -q`.
fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Runs `agentc ps` through `--backend`'s engine port: running containers only unless `--all`
/// (or a status filter), those the filters match; with `-q` their IDs only.
pub fn ps(args: PsArgs) -> Result<u8, Failure> {
    let list = List {
        filters: Filters::parse(&args.filter).map_err(Failure::usage)?,
        all: args.all,
        ids_only: args.quiet,
        volumes: args.volumes,
    };
    let listing = on_client(args.backend, list)?;
    let (rows, volumes) = (listing.rows, listing.volumes);
    if args.quiet {
        for row in &rows {
            println!("{}", short_id(&row.id));
        }
        return Ok(0);
    }
    match args.format {
        PsFormat::Table => {
            print!("{}", render(&rows));
            if args.volumes {
                print!("\n{}", render_volumes(&volumes));
            }
        }
        PsFormat::Json => {
            let volumes: Vec<serde_json::Value> = volumes
                .iter()
                .map(|(name, profile)| serde_json::json!({"name": name, "profile": profile}))
                .collect();
            let value = if args.volumes {
                serde_json::json!({"containers": rows, "volumes": volumes})
            } else {
                serde_json::json!(rows)
            };
            println!(
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            );
        }
    }
    Ok(0)
}

/// The table: `NAME  PROFILE  KIND  STATUS  ISOLATION  EGRESS  NETWORK  PORTS  SPEC
/// PROFILE-FILE`, isolation as `TIER (RUNTIME)` for a sandbox launched with a floor (`-`
/// without one), egress as `up`, `down (REASON [CODE])`, `missing` or `-`, ports as
/// `PORT -> ADDRESS`, comma-separated.
pub fn render(rows: &[Row]) -> String {
    let cells: Vec<[String; 10]> = rows
        .iter()
        .map(|row| {
            [
                row.name.clone(),
                row.profile.clone(),
                row.kind.clone(),
                row.status.clone(),
                row.isolation.clone().unwrap_or_else(|| "-".to_string()),
                row.egress
                    .as_ref()
                    .map_or_else(|| "-".to_string(), EgressState::cell),
                row.network.clone(),
                row.ports
                    .iter()
                    .map(|port| format!("{} -> {}", port.port, port.address))
                    .collect::<Vec<_>>()
                    .join(", "),
                row.spec_digest.chars().take(12).collect(),
                row.profile_state.as_str().to_string(),
            ]
        })
        .collect();
    table(
        [
            "NAME",
            "PROFILE",
            "KIND",
            "STATUS",
            "ISOLATION",
            "EGRESS",
            "NETWORK",
            "PORTS",
            "SPEC",
            "PROFILE-FILE",
        ],
        &cells,
    )
}

/// The volumes table: `VOLUME  PROFILE`.
pub fn render_volumes(volumes: &[(String, String)]) -> String {
    let cells: Vec<[String; 2]> = volumes
        .iter()
        .map(|(name, profile)| [name.clone(), profile.clone()])
        .collect();
    table(["VOLUME", "PROFILE"], &cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentc_host::inventory::{PortRow, ProfileState};

    #[test]
    fn the_quiet_listing_prints_short_ids() {
        assert_eq!(short_id("0123456789abcdef0123"), "0123456789ab");
        assert_eq!(short_id("abc"), "abc");
    }

    #[test]
    fn the_table_aligns_columns_and_names_each_port() {
        let rows = vec![Row {
            name: "agentc-sandbox-dev-1000-pentest".into(),
            id: "0123".into(),
            profile: "pentest".into(),
            kind: "sandbox".into(),
            state: "running".into(),
            status: "Up 2 seconds".into(),
            network: "scan".into(),
            ports: vec![
                PortRow {
                    port: "8080/tcp".into(),
                    address: "127.0.0.1:49153".into(),
                },
                PortRow {
                    port: "9000/tcp".into(),
                    address: "172.20.0.5:9000".into(),
                },
            ],
            egress: None,
            spec_digest: "aa41b18d2ebef4109c1076f8b47dd22e".into(),
            profile_state: ProfileState::Changed,
            isolation: Some("gvisor (runsc)".into()),
        }];
        assert_eq!(
            render(&rows),
            "NAME                             PROFILE  KIND     STATUS        ISOLATION       EGRESS  NETWORK  PORTS                                                     SPEC          PROFILE-FILE\n\
             agentc-sandbox-dev-1000-pentest  pentest  sandbox  Up 2 seconds  gvisor (runsc)  -       scan     8080/tcp -> 127.0.0.1:49153, 9000/tcp -> 172.20.0.5:9000  aa41b18d2ebe  changed\n"
        );
        assert_eq!(
            render_volumes(&[("claude-code-home-dev-1000-x".into(), "x".into())]),
            "VOLUME                       PROFILE\nclaude-code-home-dev-1000-x  x\n"
        );
    }

    #[test]
    fn a_sandbox_behind_the_proxy_shows_its_egress_state() {
        let row = |name: &str, egress: Option<EgressState>| Row {
            name: name.into(),
            id: "0123".into(),
            profile: "p".into(),
            kind: "sandbox".into(),
            state: "running".into(),
            status: "Up".into(),
            network: format!("{name}-egress"),
            ports: Vec::new(),
            egress,
            spec_digest: String::new(),
            profile_state: ProfileState::Unknown,
            isolation: None,
        };
        let rows = vec![
            row(
                "a",
                Some(EgressState::Up {
                    proxy: "a-egress-proxy".into(),
                    restarts: 1,
                }),
            ),
            row(
                "b",
                Some(EgressState::Down {
                    proxy: "b-egress-proxy".into(),
                    reason: "exited".into(),
                    exit_code: Some(137),
                    since: Some("2026-12-01T19:50:00Z".into()),
                    restarts: 0,
                }),
            ),
            row(
                "c",
                Some(EgressState::Missing {
                    network: "c-egress".into(),
                }),
            ),
        ];
        assert_eq!(
            render(&rows),
            "NAME  PROFILE  KIND     STATUS  ISOLATION  EGRESS             NETWORK   PORTS  SPEC  PROFILE-FILE\n\
             a     p        sandbox  Up      -          up (restarted 1x)  a-egress               -\n\
             b     p        sandbox  Up      -          down (exited 137)  b-egress               -\n\
             c     p        sandbox  Up      -          missing            c-egress               -\n"
        );
        let json = serde_json::to_value(&rows).unwrap();
        assert_eq!(
            json[0]["egress"],
            serde_json::json!({"state": "up", "proxy": "a-egress-proxy", "restarts": 1})
        );
        assert_eq!(json[1]["egress"]["state"], "down");
        assert_eq!(json[1]["egress"]["exit_code"], 137);
        assert_eq!(
            json[2]["egress"],
            serde_json::json!({"state": "missing", "network": "c-egress"})
        );
        assert_eq!(
            serde_json::to_value(row("d", None)).unwrap()["egress"],
            serde_json::Value::Null
        );
    }
}
