//! The egress companion as `docker` argv: the commands that come before the workload's `docker run` when its allowlist is enforced
//! outside it ([`EgressSpec`]):
//!
//! ```text
//! docker network create --internal --subnet= [--opt=]... [--label=]... NAME
//! docker create <the proxy container's flags, as docker run's but --detach> IMAGE COMMAND...
//! docker network connect --ip=ADDRESS NAME PROXY
//! docker start PROXY
//! ```

use agentc_engine::ArgvError;
use agentc_policy::{EgressSpec, IsolatedNetwork};

use crate::render::container_argv;

/// `docker network create` of the isolated network: `--internal` (`Internal`), `--subnet=`
/// (`IPAM.Config[0].Subnet`), `--opt=` (`Options`), `--label=` (`Labels`), then the name.
pub fn network_create_argv(network: &IsolatedNetwork) -> Vec<String> {
    let IsolatedNetwork {
        name,
        subnet,
        internal,
        options,
        labels,
    } = network;
    let mut argv = vec![
        "docker".to_owned(),
        "network".to_owned(),
        "create".to_owned(),
    ];
    if *internal {
        argv.push("--internal".to_owned());
    }
    argv.push(format!("--subnet={subnet}"));
    for (key, value) in options {
        argv.push(format!("--opt={key}={value}"));
    }
    for (key, value) in labels {
        argv.push(format!("--label={key}={value}"));
    }
    argv.push(name.clone());
    argv
}

/// The argv that set up the egress companion before the workload: network create, the
/// proxy's `docker create` (its image replaced by `proxy_image` when given: the executor's
/// built tag), its `docker network connect --ip=` to the isolated network, and its
/// `docker start`. A value docker's syntax cannot carry is refused first.
pub fn setup_argvs(
    egress: &EgressSpec,
    proxy_image: Option<&str>,
) -> Result<Vec<Vec<String>>, ArgvError> {
    let proxy = agentc_engine::companion::prepare::proxy_as_created(egress, proxy_image)?;
    let EgressSpec {
        network,
        outside: _,
        proxy: _,
        proxy_address,
        // The bindings are the proxy's `--credential=` words and its environment.
        credentials: _,
    } = egress;
    let mut create = container_argv(&proxy)?;
    create[1] = "create".to_owned();
    let proxy_name = proxy.name.clone().unwrap_or_default();
    Ok(vec![
        network_create_argv(network),
        create,
        vec![
            "docker".to_owned(),
            "network".to_owned(),
            "connect".to_owned(),
            format!("--ip={proxy_address}"),
            network.name.clone(),
            proxy_name.clone(),
        ],
        vec!["docker".to_owned(), "start".to_owned(), proxy_name],
    ])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use agentc_policy::{ContainerSpec, EgressSpec, IsolatedNetwork, Network};

    use super::*;

    fn egress() -> EgressSpec {
        let mut proxy = ContainerSpec::empty("agentc-egress");
        proxy.name = Some("box-egress-proxy".into());
        proxy.detach = true;
        proxy.read_only_root = true;
        proxy.sysctls = BTreeMap::from([("net.ipv4.ip_forward".into(), "0".into())]);
        proxy.command = vec!["/usr/local/bin/agentc".into(), "egress-proxy".into()];
        EgressSpec {
            network: IsolatedNetwork {
                name: "box-egress".into(),
                subnet: "10.213.0.16/28".into(),
                internal: true,
                options: BTreeMap::from([(
                    "com.docker.network.bridge.inhibit_ipv4".into(),
                    "true".into(),
                )]),
                labels: BTreeMap::from([("io.agentc.profile".into(), "box".into())]),
            },
            outside: Network::Default,
            proxy: Box::new(proxy),
            proxy_address: "10.213.0.18".parse().unwrap(),
            credentials: Vec::new(),
        }
    }

    #[test]
    fn the_set_is_network_create_create_connect_start() {
        let argvs = setup_argvs(&egress(), Some("agentc-egress:0123")).unwrap();
        let lines: Vec<String> = argvs.iter().map(|argv| argv.join(" ")).collect();
        assert_eq!(
            lines,
            [
                "docker network create --internal --subnet=10.213.0.16/28 \
                 --opt=com.docker.network.bridge.inhibit_ipv4=true \
                 --label=io.agentc.profile=box box-egress",
                "docker create --name=box-egress-proxy --read-only \
                 --sysctl=net.ipv4.ip_forward=0 agentc-egress:0123 /usr/local/bin/agentc \
                 egress-proxy",
                "docker network connect --ip=10.213.0.18 box-egress box-egress-proxy",
                "docker start box-egress-proxy",
            ]
        );
    }

    #[test]
    fn what_docker_cannot_carry_is_refused_by_field() {
        let mut bad = egress();
        bad.network.options.insert("a=b".into(), "x".into());
        let error = setup_argvs(&bad, None).unwrap_err();
        assert_eq!(error.field(), "egress.network.options.a=b");
        let mut bad = egress();
        bad.proxy.sysctls.insert(String::new(), "1".into());
        assert_eq!(setup_argvs(&bad, None).unwrap_err().field(), "sysctls.");
    }
}
