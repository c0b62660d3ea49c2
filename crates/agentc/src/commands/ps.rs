//! `agentc ps`: lists the containers agentc launched, with their network, where each port is
//! reachable, the state of their egress proxy (for a sandbox behind one), their spec digest and
//! whether their profile changed since; `--volumes` lists agentc's volumes too.

use std::fmt::Write as _;
use std::path::Path;

use agentc_engine::admin::{self, Summary};
use agentc_engine::companion::state::EgressState;
use agentc_engine::launch::reachable_inspect;
use agentc_engine::session::{Sandbox, SandboxClient};
use agentc_engine::session::{Sandboxes, SessionPort};
use agentc_engine::{network_of, published_addresses};
use agentc_policy::{
    Network, KIND_EGRESS_PROXY, LABEL_KIND, LABEL_PROFILE_FILE, LABEL_PROFILE_SHA256,
    LABEL_SPEC_DIGEST,
};

use crate::cli::{PsArgs, PsFormat};
use crate::commands::launch;
use crate::commands::session::{on_client, OnClient};
use crate::context::Failure;

/// One row of `agentc ps`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Row {
    /// The container's name.
    pub name: String,
    /// Its ID.
    pub id: String,
    /// Its `io.agentc.profile` label.
    pub profile: String,
    /// Its `io.agentc.kind` label.
    pub kind: String,
    /// The daemon's state, such as `running`.
    pub state: String,
    /// The daemon's status, such as `Up 5 minutes`.
    pub status: String,
    /// Its network: `default`, `none` or the named network.
    pub network: String,
    /// Where each container port is reachable from the host.
    pub ports: Vec<PortRow>,
    /// For a sandbox behind agentc's egress proxy, whether the proxy serves it (up, down or
    /// missing); `null` for any other container.
    pub egress: Option<EgressState>,
    /// Its `io.agentc.spec-digest` label.
    pub spec_digest: String,
    /// Whether the profile file it was launched from still has the text it had then.
    pub profile_state: ProfileState,
    /// The isolation tier and runtime chosen for its floor (`io.agentc.isolation`,
    /// `io.agentc.runtime`: `gvisor (runsc)`); absent for a launch without a floor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
}

/// A container port and where it is reachable.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PortRow {
    /// `PORT/PROTO`.
    pub port: String,
    /// `HOST:PORT`, IPv6 in brackets.
    pub address: String,
}

/// Whether a container's profile changed since it was launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileState {
    /// The file has the text it had at launch.
    Current,
    /// The file was edited since: the container no longer matches it.
    Changed,
    /// The file is gone.
    Missing,
    /// The container does not say which file (launched by another command or an older
    /// agentc).
    Unknown,
}

impl ProfileState {
    fn as_str(self) -> &'static str {
        match self {
            ProfileState::Current => "current",
            ProfileState::Changed => "changed",
            ProfileState::Missing => "missing",
            ProfileState::Unknown => "-",
        }
    }
}

/// Compares the profile file a container names with the digest it recorded.
fn profile_state(summary: &Summary) -> ProfileState {
    let (Some(file), Some(recorded)) = (
        summary.labels.get(LABEL_PROFILE_FILE),
        summary.labels.get(LABEL_PROFILE_SHA256),
    ) else {
        return ProfileState::Unknown;
    };
    match crate::context::file_sha256(Path::new(file)) {
        None => ProfileState::Missing,
        Some(now) if &now == recorded => ProfileState::Current,
        Some(_) => ProfileState::Changed,
    }
}

/// The states a container can be in, as the daemon names them (`status=` values).
pub const STATES: [&str; 7] = [
    "created",
    "running",
    "paused",
    "restarting",
    "removing",
    "exited",
    "dead",
];

/// `ps --filter KEY=VALUE`, read: the accepted values of each key (empty: any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    /// `profile=P`: the `io.agentc.profile` label.
    pub profile: Vec<String>,
    /// `kind=K`: the `io.agentc.kind` label.
    pub kind: Vec<String>,
    /// `status=S`: the daemon's state.
    pub status: Vec<String>,
}

impl Filters {
    /// Reads each `KEY=VALUE`; an unknown key, a missing `=` or an unknown state is a usage
    /// error naming it (a typo would otherwise list nothing).
    pub fn parse(filters: &[String]) -> Result<Filters, String> {
        let mut parsed = Filters::default();
        for filter in filters {
            let Some((key, value)) = filter.split_once('=') else {
                return Err(format!(
                    "--filter {filter:?} is not KEY=VALUE: write profile=P, kind=K or status=S"
                ));
            };
            let value = value.to_string();
            match key {
                "profile" => parsed.profile.push(value),
                "kind" => parsed.kind.push(value),
                "status" if STATES.contains(&value.as_str()) => parsed.status.push(value),
                "status" => {
                    return Err(format!(
                        "--filter status={value}: no container is in state {value:?}; the \
                         states are {}",
                        STATES.join(", ")
                    ))
                }
                _ => {
                    return Err(format!(
                        "--filter {filter:?}: unknown key {key:?}; the keys are profile, kind and \
                         status"
                    ))
                }
            }
        }
        Ok(parsed)
    }

    /// Whether a container is listed: running (or paused) ones only, unless `all` or a status filter
    /// asks for others; then every key's values (any of them) must match.
    pub fn matches(&self, summary: &Summary, all: bool) -> bool {
        let any = |values: &[String], value: &str| {
            values.is_empty() || values.iter().any(|wanted| wanted == value)
        };
        let kind = summary.labels.get(LABEL_KIND).map_or("", String::as_str);
        (all || !self.status.is_empty() || summary.state == "running" || summary.state == "paused")
            && any(&self.status, &summary.state)
            && any(&self.profile, &summary.profile)
            && any(&self.kind, kind)
    }
}

/// The ID `ps -q` prints: the first 12 characters, as `docker ps -q`.
fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Runs `agentc ps` through `--backend`'s engine port: running containers only unless `--all`
/// (or a status filter), those the filters match; with `-q` their IDs only.
pub fn ps(args: PsArgs) -> Result<u8, Failure> {
    let filters = Filters::parse(&args.filter).map_err(Failure::usage)?;
    let (rows, volumes) = on_client(
        args.backend,
        Listing {
            args: &args,
            filters: &filters,
        },
    )?;
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

fn network_name(network: &Network) -> String {
    match network {
        Network::Default => "default".to_string(),
        Network::None => "none".to_string(),
        Network::Named { name } => name.clone(),
    }
}

/// The state of a container's egress proxy, for a sandbox behind one (through the same
/// [`SandboxClient::egress`] as `agentc egress log`); a proxy itself, a container removed
/// meanwhile, or one the daemon cannot tell about, has none.
/// What `agentc ps` prints: its rows and volumes, asked of the engine through the client's port
/// ([`agentc_engine::admin`], written once for both backends).
struct Listing<'a> {
    args: &'a PsArgs,
    filters: &'a Filters,
}

impl OnClient for Listing<'_> {
    type Output = (Vec<Row>, Vec<(String, String)>);

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<Self::Output, Failure> {
        let Listing { args, filters } = self;
        listed(client, args, filters).await
    }
}

/// The rows and volumes of [`Listing`].
async fn listed<P: SessionPort>(
    client: &Sandboxes<P>,
    args: &PsArgs,
    filters: &Filters,
) -> Result<(Vec<Row>, Vec<(String, String)>), Failure> {
    let port = client.port();
    let summaries = admin::list(port, None)
        .await
        .map_err(launch::exec_failure)?;
    let mut rows = Vec::new();
    for summary in summaries {
        if !filters.matches(&summary, args.all) {
            continue;
        }
        if args.quiet {
            rows.push(row(summary, String::new(), Vec::new(), None));
            continue;
        }
        let (network, ports) = match reachable_inspect(port, &summary.id).await {
            Ok(inspect) => {
                let network = network_of(&inspect);
                let ports = published_addresses(&inspect, &network)
                    .into_iter()
                    .map(|found| PortRow {
                        port: found.container_port,
                        address: found.address,
                    })
                    .collect();
                (network_name(&network), ports)
            }
            // Removed meanwhile.
            Err(_) => continue,
        };
        // Only a sandbox on a named network can be behind the proxy.
        let egress = if matches!(network.as_str(), "default" | "none") {
            None
        } else {
            egress_of(client, &summary).await
        };
        rows.push(row(summary, network, ports, egress));
    }
    let volumes = if args.volumes {
        admin::list_volumes(port)
            .await
            .map_err(launch::exec_failure)?
    } else {
        Vec::new()
    };
    Ok((rows, volumes))
}

async fn egress_of<C: SandboxClient>(client: &C, summary: &Summary) -> Option<EgressState> {
    if summary.labels.get(LABEL_KIND).map(String::as_str) == Some(KIND_EGRESS_PROXY) {
        return None;
    }
    let sandbox = Sandbox {
        id: summary.id.clone(),
        name: summary.name.clone(),
        profile: summary.profile.clone(),
    };
    match client.egress(&sandbox).await {
        Ok(egress) => egress.map(|egress| egress.state),
        Err(error) => {
            log::debug!("cannot tell the egress of {}: {error}", summary.name);
            None
        }
    }
}

fn row(summary: Summary, network: String, ports: Vec<PortRow>, egress: Option<EgressState>) -> Row {
    Row {
        kind: summary.labels.get(LABEL_KIND).cloned().unwrap_or_default(),
        spec_digest: summary
            .labels
            .get(LABEL_SPEC_DIGEST)
            .cloned()
            .unwrap_or_default(),
        profile_state: profile_state(&summary),
        isolation: summary
            .labels
            .get(agentc_engine::isolation::LABEL_ISOLATION)
            .map(
                |tier| match summary.labels.get(agentc_engine::isolation::LABEL_RUNTIME) {
                    Some(runtime) => format!("{tier} ({runtime})"),
                    None => tier.clone(),
                },
            ),
        id: summary.id,
        name: summary.name,
        profile: summary.profile,
        state: summary.state,
        status: summary.status,
        network,
        ports,
        egress,
    }
}

/// Aligned columns of `cells` under `headers`.
fn table<const N: usize>(headers: [&str; N], cells: &[[String; N]]) -> String {
    let mut widths = headers.map(str::len);
    for row in cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = headers.map(str::to_string);
    for row in std::iter::once(&header).chain(cells) {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(widths) {
            let _ = write!(line, "{cell:<width$}  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
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

    fn summary(profile: &str, kind: &str, state: &str) -> Summary {
        Summary {
            id: "0123456789abcdef0123".into(),
            name: format!("{profile}-{kind}"),
            image: "i".into(),
            profile: profile.into(),
            state: state.into(),
            status: String::new(),
            labels: [(LABEL_KIND.to_string(), kind.to_string())].into(),
        }
    }

    #[test]
    fn filters_match_by_profile_kind_and_status() {
        let read = |filters: &[&str]| {
            Filters::parse(&filters.iter().map(|f| f.to_string()).collect::<Vec<_>>())
        };
        let none = read(&[]).unwrap();
        assert!(none.matches(&summary("a", "sandbox", "running"), false));
        assert!(!none.matches(&summary("a", "sandbox", "exited"), false));
        // A paused sandbox is up (frozen), so listed as a running one is (issue 23).
        assert!(none.matches(&summary("a", "sandbox", "paused"), false));
        assert!(none.matches(&summary("a", "sandbox", "exited"), true));
        let profile = read(&["profile=a", "profile=b"]).unwrap();
        assert!(profile.matches(&summary("b", "run", "running"), false));
        assert!(!profile.matches(&summary("c", "run", "running"), false));
        let both = read(&["profile=a", "kind=egress-proxy"]).unwrap();
        assert!(both.matches(&summary("a", "egress-proxy", "running"), false));
        assert!(!both.matches(&summary("a", "sandbox", "running"), false));
        // A status filter lists stopped containers without --all.
        let exited = read(&["status=exited"]).unwrap();
        assert!(exited.matches(&summary("a", "sandbox", "exited"), false));
        assert!(!exited.matches(&summary("a", "sandbox", "running"), true));
        for (bad, says) in [
            ("profile", "is not KEY=VALUE"),
            ("name=x", "unknown key \"name\""),
            (
                "status=up",
                "no container is in state \"up\"; the states are created, running",
            ),
        ] {
            let error = read(&[bad]).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
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
