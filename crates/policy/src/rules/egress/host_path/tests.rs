use crate::load::load;
use crate::resolve::resolve;
use crate::resolve::tests::{inputs, paths};
use crate::*;

const HOSTS: &str = "[egress]\nhosts = [\"api.anthropic.com\"]\n";

fn resolved(text: &str) -> (LoadedProfile, LaunchSpec) {
    let loaded = load("dev.toml", text).unwrap_or_else(|error| panic!("{error}"));
    let spec = resolve(&loaded, &inputs(LaunchKind::Run), &paths(&[]))
        .unwrap_or_else(|error| panic!("{error}"));
    (loaded, spec)
}

fn container(spec: &LaunchSpec) -> &ContainerSpec {
    match &spec.action {
        Action::Container(container) => container,
        Action::Build(_) => panic!("container expected"),
    }
}

fn caps(c: &ContainerSpec) -> Vec<&'static str> {
    c.cap_add.iter().map(|cap| cap.as_str()).collect()
}

fn allowed_egress(c: &ContainerSpec) -> String {
    match c.env.iter().find(|var| var.name == "AGENT_ALLOWED_EGRESS") {
        Some(EnvVar {
            value: EnvValue::Literal { value },
            ..
        }) => value.clone(),
        other => panic!("AGENT_ALLOWED_EGRESS: {other:?}"),
    }
}

fn codes(loaded: &LoadedProfile, spec: &LaunchSpec) -> Vec<(&'static str, Severity)> {
    findings(loaded, spec)
        .iter()
        .map(|finding| (finding.code.as_str(), finding.severity()))
        .collect()
}

/// The load errors of a profile, as `(field, message)`.
fn refused(text: &str) -> Vec<(String, String)> {
    let errors = match load("dev.toml", text) {
        Ok(_) => panic!("loads:\n{text}"),
        Err(errors) => errors,
    };
    errors
        .errors()
        .iter()
        .map(|error| match error {
            PolicyError::Invalid {
                location: Location::Profile { field, .. },
                message,
                ..
            } => (field.clone(), message.clone()),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn presets_behind_the_proxy_lose_net_admin_and_net_raw_and_their_firewall_stands_down() {
    for agent in ["claude-code", "opencode", "codex", "hermes"] {
        let text = format!("name = \"dev\"\nagent = \"{agent}\"\n{HOSTS}");
        let (loaded, outside) = resolved(&text);
        let c = container(&outside);
        assert!(c.egress.is_some());
        assert!(!c.cap_add.contains(&Capability::NetAdmin), "{agent}");
        assert!(!c.cap_add.contains(&Capability::NetRaw), "{agent}");
        assert!(c.cap_add.contains(&Capability::Setuid), "{agent}");
        assert!(c.cap_add.contains(&Capability::Setgid), "{agent}");
        assert_eq!(allowed_egress(c), "*", "{agent}");
        for (key, value) in IPV6_SYSCTLS {
            assert_eq!(c.sysctls.get(key).map(String::as_str), Some(value));
        }
        assert!(!codes(&loaded, &outside)
            .iter()
            .any(|(code, _)| *code == "egress-host-path"));
        let words = explain(&loaded, &outside);
        assert!(!words.contains("add NET_ADMIN"), "{words}");
        assert!(
            words.contains("the image's firewall stands down"),
            "{words}"
        );
        assert!(words.contains("  ipv6: off in the sandbox"), "{words}");
        assert!(
            words.contains("  host path: no NET_ADMIN or NET_RAW"),
            "{words}"
        );

        // Enforced by the image: the preset's capabilities, its firewall, no sysctl.
        let (_, image) = resolved(&format!("{text}enforce = \"image\"\n"));
        let c = container(&image);
        assert!(c.egress.is_none());
        assert!(c.cap_add.contains(&Capability::NetAdmin), "{agent}");
        assert!(c.cap_add.contains(&Capability::NetRaw), "{agent}");
        assert_eq!(allowed_egress(c), "api.anthropic.com");
        assert!(c.sysctls.is_empty());
    }
}

#[test]
fn the_escape_hatch_keeps_the_old_behaviour_as_a_high_finding() {
    let text =
        format!("name = \"dev\"\nagent = \"claude-code\"\n{HOSTS}allow_net_capabilities = true\n");
    let (loaded, spec) = resolved(&text);
    let c = container(&spec);
    assert_eq!(caps(c), ["NET_ADMIN", "NET_RAW", "SETGID", "SETUID"]);
    let proxy = c.egress.as_ref().unwrap().proxy_address;
    assert_eq!(allowed_egress(c), format!("api.anthropic.com,{proxy}"));
    // IPv6 stays off whatever the capabilities: /proc/sys is read-only in the container.
    assert_eq!(c.sysctls.len(), IPV6_SYSCTLS.len());
    let report = findings(&loaded, &spec);
    let finding = report
        .iter()
        .find(|finding| finding.code == "egress-host-path")
        .expect("the host-path finding");
    assert_eq!(finding.severity(), Severity::High);
    assert_eq!(finding.field(), "egress.allow_net_capabilities");
    assert_eq!(finding.position().map(|(line, _)| line), Some(5));
    assert!(
        finding.message.contains("NET_ADMIN and NET_RAW"),
        "{}",
        finding.message
    );
    assert!(finding.message.contains("without the proxy or its log"));
    let text = explain(&loaded, &spec);
    assert!(
        text.contains("the image's firewall is a second layer"),
        "{text}"
    );
    assert!(
        text.contains("  add NET_ADMIN: yes  [preset claude-code]"),
        "{text}"
    );
    assert!(
        text.contains(
            "NET_ADMIN and NET_RAW behind the egress proxy: the host's own addresses on the \
             isolated network, without the proxy or its log  [profile line 5 \
             (egress.allow_net_capabilities)]"
        ),
        "{text}"
    );
    assert!(text.contains("high egress-host-path"), "{text}");
}

const CUSTOM: &str = "name = \"lab\"\nagent = \"custom\"\n[image]\nref = \"busybox:1\"\n";

#[test]
fn a_workload_that_may_be_root_with_net_admin_or_net_raw_is_refused_behind_the_proxy() {
    let caps = "[security]\nadd_capabilities = [\"NET_ADMIN\", \"CHOWN\", \"NET_RAW\"]\n";
    for user in [
        "",
        "user = \"0\"\n",
        "user = \"root\"\n",
        "user = \"agent:agent\"\n",
    ] {
        let text = format!("{CUSTOM}{user}{caps}{HOSTS}");
        let errors = refused(&text);
        let fields: Vec<&str> = errors.iter().map(|(field, _)| field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "security.add_capabilities[0]",
                "security.add_capabilities[2]"
            ],
            "{user}"
        );
        assert!(errors[0]
            .1
            .contains("adds NET_ADMIN behind the egress proxy"));
        assert!(errors[0].1.contains("a route or a neighbour entry"));
        assert!(errors[1].1.contains("adds NET_RAW behind the egress proxy"));
        assert!(errors[1].1.contains("raw frames"));
        assert!(errors[0].1.contains("past the proxy and its log"));
    }
    let errors = refused(&format!("{CUSTOM}{caps}{HOSTS}"));
    assert!(errors[0].1.contains("image.user is unset"), "{errors:?}");
    // A preset's entrypoint starts as root.
    let errors = refused(&format!(
        "name = \"dev\"\nagent = \"codex\"\n[security]\nadd_capabilities = [\"NET_RAW\"]\n{HOSTS}"
    ));
    assert!(
        errors[0].1.contains("entrypoint starts as root"),
        "{errors:?}"
    );

    // A numeric non-root user cannot regain them under no-new-privileges.
    let (_, spec) = resolved(&format!("{CUSTOM}user = \"1000:1000\"\n{caps}{HOSTS}"));
    assert!(container(&spec).cap_add.contains(&Capability::NetAdmin));
    // Enforced by the image (no proxy): not this rule's business.
    let (_, spec) = resolved(&format!("{CUSTOM}{caps}{HOSTS}enforce = \"image\"\n"));
    assert!(container(&spec).egress.is_none());
    // The escape hatch accepts them, as a high finding.
    let (loaded, spec) = resolved(&format!(
        "{CUSTOM}{caps}{HOSTS}allow_net_capabilities = true\n"
    ));
    assert!(codes(&loaded, &spec).contains(&("egress-host-path", Severity::High)));
}

#[test]
fn the_escape_hatch_is_refused_without_the_proxy() {
    for egress in [
        "[egress]\nhosts = [\"a.example\"]\nenforce = \"image\"\nallow_net_capabilities = true\n",
        "[egress]\nmode = \"deny\"\nallow_net_capabilities = true\n",
    ] {
        let errors = refused(&format!("{CUSTOM}{egress}"));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].0, "egress.allow_net_capabilities");
        assert!(errors[0]
            .1
            .contains("read only behind agentc's egress proxy"));
    }
}
