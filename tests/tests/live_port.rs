//! The engine port's two implementations answer alike: the same operations, run through the
//! command line (`CliPort`) and the Engine API (`ApiPort`) against the real daemon, give the
//! same transcript of observations and the same kinds of refusal (issue 20). Everything is
//! the test's own: a volume, an internal network (no traffic is sent), a container of the
//! busybox test image, a tag; all removed.

use std::collections::BTreeMap;
use std::fmt::Write;

use agentc_backend_cli::exec::port::CliPort;
use agentc_conformance::image::ensure_test_image;
use agentc_conformance::live::{docker, require_daemon};
use agentc_engine::port::{EngineError, EnginePort, Filter};
use agentc_engine::Engine;
use agentc_policy::{ContainerSpec, EgressSpec, IsolatedNetwork, Network};

const LABEL: &str = "io.agentc.port-test";

fn kind<T: std::fmt::Debug>(result: Result<T, EngineError>) -> String {
    match result {
        Ok(value) => format!("ok {value:?}"),
        Err(error) => format!("{:?}", error.kind),
    }
}

fn isolated(name: &str, subnet: &str, run: &str) -> EgressSpec {
    let mut proxy = ContainerSpec::empty("unused");
    proxy.name = Some(format!("{name}-proxy"));
    EgressSpec {
        network: IsolatedNetwork {
            name: name.to_string(),
            subnet: subnet.to_string(),
            internal: true,
            options: BTreeMap::new(),
            labels: BTreeMap::from([(LABEL.to_string(), run.to_string())]),
        },
        outside: Network::Default,
        proxy: Box::new(proxy),
        proxy_address: "10.231.7.2".parse().unwrap(),
        credentials: Vec::new(),
    }
}

/// Runs the same operations through `port`, on objects named with `run`, and writes what each
/// returned (names, labels, states, the kind of each refusal) into a transcript, with `run`
/// written as RUN so that the two ports' transcripts compare.
async fn transcript<P: EnginePort>(port: &P, run: &str, image: &str, subnet: &str) -> String {
    let mut out = String::new();
    let label = format!("{LABEL}={run}");
    let filter = Filter::labels([label.clone()]);
    let missing = format!("agentc-port-missing-{run}");

    // Images.
    writeln!(
        out,
        "image missing: {}",
        kind(port.image_exists(&missing).await)
    )
    .unwrap();
    let inspect = port.image_inspect(&missing).await;
    writeln!(
        out,
        "image inspect missing: {}",
        kind(inspect.map(|i| i.is_some()))
    )
    .unwrap();
    let id = port.image_inspect(image).await.unwrap().map(|i| i.id);
    let docker_id = docker(&["image", "inspect", "--format", "{{.Id}}", image]).ok();
    writeln!(
        out,
        "image id as docker says: {}",
        id.flatten() == docker_id
    )
    .unwrap();
    let tag = format!("agentc-port-test:{run}");
    writeln!(out, "tag: {}", kind(port.tag_image(image, &tag).await)).unwrap();
    writeln!(out, "tag exists: {}", kind(port.image_exists(&tag).await)).unwrap();
    let _ = docker(&["image", "rm", &tag]);

    // Volumes.
    let volume = format!("agentc-port-{run}");
    let labels = BTreeMap::from([(LABEL.to_string(), run.to_string())]);
    writeln!(
        out,
        "volume before: {}",
        kind(port.volume_exists(&volume).await)
    )
    .unwrap();
    writeln!(
        out,
        "volume create: {}",
        kind(port.create_volume(&volume, &labels).await)
    )
    .unwrap();
    writeln!(
        out,
        "volume after: {}",
        kind(port.volume_exists(&volume).await)
    )
    .unwrap();
    for listed in port.list_volumes(&filter).await.unwrap() {
        writeln!(
            out,
            "volume listed: {} {:?} {:?}",
            listed.name, listed.labels, listed.internal
        )
        .unwrap();
        writeln!(out, "volume has a time: {}", listed.created.is_some()).unwrap();
    }
    writeln!(
        out,
        "volume rm: {}",
        kind(port.remove_volume(&volume).await)
    )
    .unwrap();
    writeln!(
        out,
        "volume rm again: {}",
        kind(port.remove_volume(&volume).await)
    )
    .unwrap();

    // Networks.
    let network = format!("agentc-port-{run}");
    writeln!(
        out,
        "network missing: {}",
        kind(port.network(&missing).await)
    )
    .unwrap();
    writeln!(
        out,
        "network rm missing: {}",
        kind(port.remove_network(&missing).await)
    )
    .unwrap();
    let egress = isolated(&network, subnet, run);
    writeln!(
        out,
        "network create: {}",
        kind(port.create_isolated_network(&egress.network).await)
    )
    .unwrap();
    let again = port.create_isolated_network(&egress.network).await;
    writeln!(out, "network create again: {}", kind(again)).unwrap();
    let found = port.network(&network).await.unwrap().unwrap();
    writeln!(
        out,
        "network: {} {:?} internal {:?}",
        found.name, found.labels, found.internal
    )
    .unwrap();
    for listed in port.list_networks(&filter).await.unwrap() {
        writeln!(out, "network listed: {} {:?}", listed.name, listed.labels).unwrap();
        writeln!(out, "network has a time: {}", listed.created.is_some()).unwrap();
    }

    // Containers.
    let container = format!("agentc-port-{run}");
    writeln!(
        out,
        "inspect missing: {}",
        kind(port.inspect(&missing).await.map(|_| ()))
    )
    .unwrap();
    writeln!(
        out,
        "exec missing: {}",
        kind(port.exec_status(&missing, &["true"]).await)
    )
    .unwrap();
    writeln!(
        out,
        "rm missing: {}",
        kind(port.remove_container(&missing).await)
    )
    .unwrap();
    docker(&[
        "run",
        "--detach",
        "--name",
        &container,
        "--label",
        &label,
        "--network",
        &network,
        "--entrypoint",
        "sh",
        image,
        "-c",
        "echo hello; exec sleep 600",
    ])
    .expect("start the test's container");
    let on_network = port.list_containers(&Filter::on_network(&network)).await;
    for listed in on_network.unwrap() {
        writeln!(
            out,
            "on network: {} {} {:?}",
            listed.name, listed.state, listed.networks
        )
        .unwrap();
    }
    for listed in port.list_containers(&filter).await.unwrap() {
        writeln!(
            out,
            "container listed: {} {} {:?}",
            listed.name, listed.state, listed.labels
        )
        .unwrap();
        writeln!(out, "container has a time: {}", listed.created.is_some()).unwrap();
        writeln!(out, "container ended: {}", listed.ended()).unwrap();
    }
    writeln!(
        out,
        "exec true: {}",
        kind(port.exec_status(&container, &["true"]).await)
    )
    .unwrap();
    writeln!(
        out,
        "exec false: {}",
        kind(port.exec_status(&container, &["false"]).await)
    )
    .unwrap();
    writeln!(
        out,
        "logs: {}",
        kind(
            port.logs_tail(&container, 5)
                .await
                .map(|t| t.trim().to_string())
        )
    )
    .unwrap();
    writeln!(
        out,
        "network rm in use: {}",
        kind(port.remove_network(&network).await)
    )
    .unwrap();
    docker(&["kill", &container]).expect("kill the test's container");
    let _ = docker(&["wait", &container]);
    writeln!(
        out,
        "exec stopped: {}",
        kind(port.exec_status(&container, &["true"]).await)
    )
    .unwrap();
    for listed in port.list_containers(&filter).await.unwrap() {
        writeln!(out, "container ended now: {}", listed.ended()).unwrap();
    }
    writeln!(out, "rm: {}", kind(port.remove_container(&container).await)).unwrap();
    writeln!(
        out,
        "inspect gone: {}",
        kind(port.inspect(&container).await.map(|_| ()))
    )
    .unwrap();
    writeln!(
        out,
        "network rm: {}",
        kind(port.remove_network(&network).await)
    )
    .unwrap();
    writeln!(
        out,
        "network rm again: {}",
        kind(port.remove_network(&network).await)
    )
    .unwrap();
    out.replace(run, "RUN")
}

fn cleanup(run: &str) {
    let name = format!("agentc-port-{run}");
    let _ = docker(&["rm", "--force", &name]);
    let _ = docker(&["network", "rm", &name]);
    let _ = docker(&["volume", "rm", &name]);
    let _ = docker(&["image", "rm", &format!("agentc-port-test:{run}")]);
}

#[test]
fn live_both_engine_ports_answer_alike() {
    let _turn = agentc_conformance::turn::turn(file!());
    if !require_daemon("live_both_engine_ports_answer_alike") {
        return;
    }
    let image = ensure_test_image().expect("the busybox test image");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pid = std::process::id();
    let (cli_run, api_run) = (format!("cli{pid}"), format!("api{pid}"));
    let (cli, api) = runtime.block_on(async {
        let cli = transcript(
            &CliPort::new(Engine::Docker),
            &cli_run,
            &image,
            "10.231.7.0/28",
        )
        .await;
        let port = agentc_backend_api::connect(Engine::Docker, None)
            .await
            .expect("the Engine API");
        let api = transcript(&port, &api_run, &image, "10.231.7.16/28").await;
        (cli, api)
    });
    cleanup(&cli_run);
    cleanup(&api_run);
    println!("{cli}");
    assert_eq!(
        cli, api,
        "the command line and the Engine API answered differently"
    );
    // What both must say, not only alike.
    for line in [
        "image missing: ok false",
        "image inspect missing: ok false",
        "image id as docker says: true",
        "tag exists: ok true",
        "volume before: ok false",
        "volume after: ok true",
        "volume rm again: NotFound",
        "network missing: ok None",
        "network rm missing: NotFound",
        "network create again: Conflict",
        "internal Some(true)",
        "inspect missing: NotFound",
        "exec missing: NotFound",
        "rm missing: ok ()",
        "on network: agentc-port-RUN running [\"agentc-port-RUN\"]",
        "container ended: false",
        "exec true: ok 0",
        "exec false: ok 1",
        "logs: ok \"hello\"",
        "network rm in use: Conflict",
        "exec stopped: NotRunning",
        "container ended now: true",
        "inspect gone: NotFound",
        "network rm: ok ()",
        "network rm again: NotFound",
    ] {
        assert!(cli.contains(line), "missing {line:?} in:\n{cli}");
    }
}
