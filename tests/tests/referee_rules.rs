//! The referee's own tests: each canonicalization rule, the difference report, and a smoke test
//! of the stand-in Engine with the real docker CLI.

use agentc_conformance::canonical::{
    canonical, capability_spelling, diff, drop_unset_fields, empty_volume_driver_config, env_order,
    network_mode_default, pointer_defaults, primary_endpoint_empty, report, restart_policy_no,
    security_opt_order, security_opt_spelling, Difference,
};
use agentc_conformance::referee::{
    apply_run_semantics, docker_cli_version, require_docker_cli, split_run_argv, Referee,
};
use serde_json::{json, Value};

/// Asserts that two bodies have the same canonical form, printing the differences otherwise.
fn assert_same(a: &Value, b: &Value) {
    let differences = diff(a, b);
    assert!(
        differences.is_empty(),
        "bodies differ:\n{}",
        report(&differences)
    );
    assert_eq!(canonical(a), canonical(b));
}

/// Asserts that exactly one field differs, at `path`.
fn assert_differs_at(a: &Value, b: &Value, path: &str) {
    let differences = diff(a, b);
    let paths: Vec<&str> = differences.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, [path], "differences:\n{}", report(&differences));
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// ---- capability_spelling ------------------------------------------------------------------

#[test]
fn capability_spelling_case_prefix_order_and_repeats_are_equal() {
    let cli = json!({"HostConfig": {"CapAdd": ["CAP_NET_ADMIN", "CAP_CHOWN"], "CapDrop": ["ALL"]}});
    let api =
        json!({"HostConfig": {"CapAdd": ["chown", "NET_ADMIN", "cap_chown"], "CapDrop": ["all"]}});
    assert_same(&cli, &api);
    let mut body = api.clone();
    capability_spelling(&mut body);
    assert_eq!(
        body["HostConfig"]["CapAdd"],
        json!(["CAP_CHOWN", "CAP_NET_ADMIN"])
    );
    assert_eq!(body["HostConfig"]["CapDrop"], json!(["ALL"]));
}

#[test]
fn capability_difference_is_reported() {
    let cli = json!({"HostConfig": {"CapAdd": ["CAP_NET_ADMIN"]}});
    let api = json!({"HostConfig": {"CapAdd": ["NET_RAW"]}});
    assert_differs_at(&cli, &api, "HostConfig.CapAdd[0]");
    // CapDrop ALL is not the same as dropping nothing.
    let api = json!({"HostConfig": {"CapAdd": ["NET_ADMIN"], "CapDrop": ["ALL"]}});
    assert_differs_at(&cli, &api, "HostConfig.CapDrop");
}

// ---- network_mode_default -----------------------------------------------------------------

#[test]
fn network_mode_default_equals_unset() {
    let cli = json!({"Image": "i", "HostConfig": {"NetworkMode": "default"}});
    let api = json!({"Image": "i", "HostConfig": {"NetworkMode": ""}});
    assert_same(&cli, &api);
    assert_same(&cli, &json!({"Image": "i"}));
    let mut body = cli.clone();
    network_mode_default(&mut body);
    assert_eq!(body, json!({"Image": "i", "HostConfig": {}}));
}

#[test]
fn network_mode_difference_is_reported() {
    let cli = json!({"HostConfig": {"NetworkMode": "default"}});
    let api = json!({"HostConfig": {"NetworkMode": "none"}});
    assert_differs_at(&cli, &api, "HostConfig.NetworkMode");
    let api = json!({"HostConfig": {"NetworkMode": "bridge"}});
    assert_differs_at(&cli, &api, "HostConfig.NetworkMode");
}

// ---- restart_policy_no --------------------------------------------------------------------

#[test]
fn restart_policy_no_equals_unset() {
    let cli = json!({"HostConfig": {"RestartPolicy": {"Name": "no", "MaximumRetryCount": 0}}});
    assert_same(&cli, &json!({}));
    let mut body = cli.clone();
    restart_policy_no(&mut body);
    assert_eq!(
        body["HostConfig"]["RestartPolicy"],
        json!({"MaximumRetryCount": 0})
    );
}

#[test]
fn restart_policy_difference_is_reported() {
    let cli = json!({"HostConfig": {"RestartPolicy": {"Name": "no"}}});
    let api = json!({"HostConfig": {"RestartPolicy": {"Name": "always"}}});
    assert_differs_at(&cli, &api, "HostConfig.RestartPolicy.Name");
}

// ---- pointer_defaults ---------------------------------------------------------------------

#[test]
fn pointer_defaults_equal_unset() {
    let cli =
        json!({"HostConfig": {"MemorySwappiness": -1, "OomKillDisable": false, "PidsLimit": 0}});
    assert_same(&cli, &json!({"HostConfig": {}}));
    assert_same(&json!({"HostConfig": {"PidsLimit": -1}}), &json!({}));
    let mut body = cli.clone();
    pointer_defaults(&mut body);
    assert_eq!(body, json!({"HostConfig": {}}));
}

#[test]
fn pointer_values_are_kept() {
    let cli = json!({"HostConfig": {"PidsLimit": 0, "MemorySwappiness": -1}});
    let api = json!({"HostConfig": {"PidsLimit": 512, "MemorySwappiness": 0}});
    let differences = diff(&cli, &api);
    let paths: Vec<&str> = differences.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        ["HostConfig.MemorySwappiness", "HostConfig.PidsLimit"]
    );
    assert_eq!(differences[1].api, Some(json!(512)));
    assert_eq!(differences[1].cli, None);
    // OomKillDisable true is a real setting.
    assert_differs_at(
        &json!({"HostConfig": {"OomKillDisable": false}}),
        &json!({"HostConfig": {"OomKillDisable": true}}),
        "HostConfig.OomKillDisable",
    );
}

// ---- security_opt_spelling / security_opt_order -------------------------------------------

#[test]
fn security_opt_spelling_and_order_are_equal() {
    let cli = json!({"HostConfig": {"SecurityOpt": ["no-new-privileges", "apparmor=unconfined"]}});
    let api =
        json!({"HostConfig": {"SecurityOpt": ["apparmor=unconfined", "no-new-privileges=true"]}});
    assert_same(&cli, &api);
    let mut body = cli.clone();
    security_opt_spelling(&mut body);
    assert_eq!(
        body["HostConfig"]["SecurityOpt"],
        json!(["no-new-privileges=true", "apparmor=unconfined"])
    );
    security_opt_order(&mut body);
    assert_eq!(
        body["HostConfig"]["SecurityOpt"],
        json!(["apparmor=unconfined", "no-new-privileges=true"])
    );
}

#[test]
fn security_opt_order_is_kept_when_a_key_repeats() {
    // The last apparmor= wins in the daemon, so these two are different requests.
    let cli = json!({"HostConfig": {"SecurityOpt": ["apparmor=a", "apparmor=b"]}});
    let api = json!({"HostConfig": {"SecurityOpt": ["apparmor=b", "apparmor=a"]}});
    let differences = diff(&cli, &api);
    let paths: Vec<&str> = differences.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        ["HostConfig.SecurityOpt[0]", "HostConfig.SecurityOpt[1]"]
    );
    assert_differs_at(
        &json!({"HostConfig": {"SecurityOpt": ["no-new-privileges"]}}),
        &json!({"HostConfig": {"SecurityOpt": ["no-new-privileges=false"]}}),
        "HostConfig.SecurityOpt[0]",
    );
}

// ---- env_order ----------------------------------------------------------------------------

#[test]
fn env_order_is_ignored_for_unique_names() {
    let cli = json!({"Env": ["B=2", "A=1=x\ny", "SECRET"]});
    let api = json!({"Env": ["SECRET", "A=1=x\ny", "B=2"]});
    assert_same(&cli, &api);
    let mut body = cli.clone();
    env_order(&mut body);
    assert_eq!(body["Env"], json!(["A=1=x\ny", "B=2", "SECRET"]));
}

#[test]
fn env_order_is_kept_for_repeated_names_and_values_are_compared() {
    let cli = json!({"Env": ["A=1", "A=2"]});
    let api = json!({"Env": ["A=2", "A=1"]});
    assert_eq!(diff(&cli, &api).len(), 2);
    assert_differs_at(
        &json!({"Env": ["A=1", "B=2"]}),
        &json!({"Env": ["B=2", "A=x"]}),
        "Env[0]",
    );
    // A bare name (pass-through, unset) is not the same as an empty value.
    assert_differs_at(&json!({"Env": ["A"]}), &json!({"Env": ["A="]}), "Env[0]");
}

// ---- drop_unset_fields --------------------------------------------------------------------

#[test]
fn zero_struct_fields_equal_absent() {
    let cli = json!({
        "Hostname": "", "User": "", "AttachStdin": false, "Cmd": ["sh"], "Entrypoint": null,
        "Env": [], "Labels": {}, "Volumes": {}, "OnBuild": null, "Image": "i",
        "HostConfig": {
            "Binds": null, "BlkioWeight": 0, "ConsoleSize": [0, 0], "Dns": [],
            "LogConfig": {"Config": {}, "Type": ""}, "Memory": 0, "MaskedPaths": null,
            "Mounts": [{"Type": "bind", "Source": "/s", "Target": "/t", "ReadOnly": false,
                        "Consistency": ""}],
            "PortBindings": {"80/tcp": [{"HostIp": "127.0.0.1", "HostPort": ""}]},
            "Devices": [{"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse",
                         "CgroupPermissions": "rwm"}],
        },
        "NetworkingConfig": {"EndpointsConfig": {}},
    });
    let api = json!({
        "Cmd": ["sh"], "Image": "i",
        "HostConfig": {
            "Mounts": [{"Type": "bind", "Source": "/s", "Target": "/t"}],
            "PortBindings": {"80/tcp": [{"HostIp": "127.0.0.1"}]},
            "Devices": [{"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse",
                         "CgroupPermissions": "rwm"}],
        },
    });
    assert_same(&cli, &api);
    let mut body = cli.clone();
    drop_unset_fields(&mut body);
    assert_eq!(body["HostConfig"].get("LogConfig"), None);
    assert_eq!(body.get("NetworkingConfig"), None);
}

#[test]
fn meaningful_zero_values_are_kept() {
    // Entrypoint [] clears the image's entrypoint; null keeps it.
    assert_differs_at(
        &json!({"Entrypoint": null}),
        &json!({"Entrypoint": []}),
        "Entrypoint",
    );
    // MaskedPaths [] unmasks everything; absent means the daemon's defaults.
    assert_differs_at(
        &json!({"HostConfig": {"MaskedPaths": []}}),
        &json!({"HostConfig": {}}),
        "HostConfig.MaskedPaths",
    );
    // An empty tmpfs option string is a tmpfs mount; an empty label is a label.
    assert_differs_at(
        &json!({"HostConfig": {"Tmpfs": {"/x": ""}}}),
        &json!({}),
        r#"HostConfig.Tmpfs["/x"]"#,
    );
    assert_differs_at(
        &json!({"Labels": {"a": ""}}),
        &json!({"Labels": {}}),
        "Labels.a",
    );
    // ExposedPorts values are always {}: the key is the data.
    assert_differs_at(
        &json!({"ExposedPorts": {"80/tcp": {}}}),
        &json!({}),
        r#"ExposedPorts["80/tcp"]"#,
    );
    // A non-nil empty mount option struct differs from none (the daemon validates it).
    assert_differs_at(
        &json!({"HostConfig": {"Mounts": [{"Type": "volume", "VolumeOptions": {}}]}}),
        &json!({"HostConfig": {"Mounts": [{"Type": "volume"}]}}),
        "HostConfig.Mounts[0].VolumeOptions",
    );
    // A zero stop timeout is a setting.
    assert_differs_at(&json!({"StopTimeout": 0}), &json!({}), "StopTimeout");
    // Read-only is a real difference, with its full path.
    let differences = diff(
        &json!({"HostConfig": {"Mounts": [{"Target": "/t", "ReadOnly": true}]}}),
        &json!({"HostConfig": {"Mounts": [{"Target": "/t", "ReadOnly": false}]}}),
    );
    assert_eq!(
        differences,
        [Difference {
            path: "HostConfig.Mounts[0].ReadOnly".into(),
            cli: Some(json!(true)),
            api: None,
        }]
    );
}

#[test]
fn mount_order_is_significant() {
    let a = json!({"HostConfig": {"Mounts": [{"Target": "/a"}, {"Target": "/a/b"}]}});
    let b = json!({"HostConfig": {"Mounts": [{"Target": "/a/b"}, {"Target": "/a"}]}});
    let differences = diff(&a, &b);
    let paths: Vec<&str> = differences.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        ["HostConfig.Mounts[0].Target", "HostConfig.Mounts[1].Target"]
    );
}

// ---- empty_volume_driver_config ----------------------------------------------------------

#[test]
fn empty_volume_driver_config_equals_absent() {
    let cli = json!({"HostConfig": {"Mounts": [{"Type": "volume", "Source": "v", "Target": "/t",
        "VolumeOptions": {"Subpath": "a/b", "DriverConfig": {"Name": "", "Options": null}}}]}});
    let api = json!({"HostConfig": {"Mounts": [{"Type": "volume", "Source": "v", "Target": "/t",
        "VolumeOptions": {"Subpath": "a/b"}}]}});
    assert_same(&cli, &api);
    let mut body = json!({"HostConfig": {"Mounts": [{"VolumeOptions": {"DriverConfig": {}}}]}});
    empty_volume_driver_config(&mut body);
    assert_eq!(
        body,
        json!({"HostConfig": {"Mounts": [{"VolumeOptions": {}}]}})
    );
}

#[test]
fn volume_driver_config_with_a_driver_is_kept() {
    assert_differs_at(
        &json!({"HostConfig": {"Mounts": [{"VolumeOptions": {"DriverConfig": {"Name": "nfs"}}}]}}),
        &json!({"HostConfig": {"Mounts": [{"VolumeOptions": {}}]}}),
        "HostConfig.Mounts[0].VolumeOptions.DriverConfig.Name",
    );
    // Only the driver config goes: the options struct itself stays (it is a pointer).
    assert_differs_at(
        &json!({"HostConfig": {"Mounts": [{"VolumeOptions": {"DriverConfig": {}}}]}}),
        &json!({"HostConfig": {"Mounts": [{}]}}),
        "HostConfig.Mounts[0].VolumeOptions",
    );
}

// ---- primary_endpoint_empty ---------------------------------------------------------------

#[test]
fn empty_primary_endpoint_equals_absent() {
    let cli = json!({
        "HostConfig": {"NetworkMode": "agentc-egress"},
        "NetworkingConfig": {"EndpointsConfig": {"agentc-egress": {
            "Aliases": null, "IPAMConfig": null, "IPAddress": "", "GwPriority": 0, "Links": null
        }}},
    });
    let api = json!({"HostConfig": {"NetworkMode": "agentc-egress"}});
    assert_same(&cli, &api);
    let default = json!({"NetworkingConfig": {"EndpointsConfig": {"default": {"IPAddress": ""}}}});
    assert_same(&default, &json!({}));
    let mut body = default.clone();
    primary_endpoint_empty(&mut body);
    assert_eq!(body, json!({"NetworkingConfig": {"EndpointsConfig": {}}}));
}

#[test]
fn other_or_configured_endpoints_are_kept() {
    // An entry for another network connects the container to it.
    assert_differs_at(
        &json!({"HostConfig": {"NetworkMode": "a"}, "NetworkingConfig": {"EndpointsConfig": {"b": {}}}}),
        &json!({"HostConfig": {"NetworkMode": "a"}}),
        "NetworkingConfig.EndpointsConfig.b",
    );
    // An alias on the primary network is a setting.
    assert_differs_at(
        &json!({"NetworkingConfig": {"EndpointsConfig": {"default": {"Aliases": ["x"]}}}}),
        &json!({}),
        "NetworkingConfig.EndpointsConfig.default.Aliases",
    );
}

// ---- canonical and diff -------------------------------------------------------------------

#[test]
fn canonical_is_idempotent_and_diff_paths_quote_odd_keys() {
    let body = json!({
        "Env": ["B=1", "A=2"], "Labels": {"io.agentc.kind": "run"},
        "HostConfig": {"CapAdd": ["net_admin"], "NetworkMode": "default", "SecurityOpt": ["no-new-privileges"]},
    });
    let once = canonical(&body);
    assert_eq!(canonical(&once), once);
    let differences = diff(&body, &json!({"Labels": {"io.agentc.kind": "seed"}}));
    let text: Vec<String> = differences.iter().map(ToString::to_string).collect();
    assert!(
        text.contains(&r#"Labels["io.agentc.kind"]: cli = "run", api = "seed""#.to_string()),
        "{text:?}"
    );
    assert!(
        text.contains(
            &r#"HostConfig.SecurityOpt: cli = ["no-new-privileges=true"], api = (absent)"#
                .to_string()
        ),
        "{text:?}"
    );
    assert!(
        text.contains(&r#"Env: cli = ["A=2","B=1"], api = (absent)"#.to_string()),
        "{text:?}"
    );
}

// ---- run versus create --------------------------------------------------------------------

#[test]
fn detached_run_clears_attach_fields() {
    let split = split_run_argv(&strings(&[
        "docker", "run", "--detach", "--rm", "-i", "img",
    ]))
    .unwrap();
    assert!(split.detach);
    assert_eq!(split.create_args, strings(&["--rm", "-i", "img"]));
    let mut body = json!({"AttachStdin": true, "AttachStdout": true, "AttachStderr": true,
                          "OpenStdin": true, "StdinOnce": true});
    apply_run_semantics(&mut body, true);
    assert_eq!(
        body,
        json!({"AttachStdin": false, "AttachStdout": false, "AttachStderr": false,
               "OpenStdin": true, "StdinOnce": false})
    );
    let mut attached = json!({"AttachStdout": true});
    apply_run_semantics(&mut attached, false);
    assert_eq!(attached, json!({"AttachStdout": true}));
}

// ---- smoke test with the real docker CLI --------------------------------------------------

#[test]
fn smoke_docker_create_reaches_the_referee() {
    if !require_docker_cli("smoke_docker_create_reaches_the_referee") {
        return;
    }
    println!(
        "docker CLI version: {}",
        docker_cli_version().unwrap_or_default()
    );
    let referee = Referee::start().expect("start the referee");
    let args = strings(&[
        "--env=A=1",
        "--mount=type=bind,source=/tmp,target=/x,readonly",
        "--cap-add=NET_ADMIN",
        "busybox:test",
        "sh",
    ]);
    let recorded = referee.create(&args, &[]).unwrap_or_else(|e| panic!("{e}"));
    let body = &recorded.body;
    // The CLI negotiates down to the stand-in's version (or its own maximum, if older).
    assert!(
        recorded.path.starts_with("/v1.") && recorded.path.ends_with("/containers/create"),
        "{}",
        recorded.path
    );
    assert_eq!(body["Image"], json!("busybox:test"));
    assert_eq!(body["Cmd"], json!(["sh"]));
    assert_eq!(body["Env"], json!(["A=1"]));
    assert_eq!(
        body["HostConfig"]["Mounts"][0],
        json!({"Type": "bind", "Source": "/tmp", "Target": "/x", "ReadOnly": true})
    );
    // The Go client normalizes the spelling before sending.
    assert_eq!(body["HostConfig"]["CapAdd"], json!(["CAP_NET_ADMIN"]));
    // The whole CLI body reduces to what was asked for, and nothing else.
    assert_eq!(
        canonical(body),
        json!({
            "AttachStderr": true, "AttachStdout": true, "Cmd": ["sh"], "Env": ["A=1"],
            "Image": "busybox:test",
            "HostConfig": {
                "CapAdd": ["CAP_NET_ADMIN"],
                "Mounts": [{"ReadOnly": true, "Source": "/tmp", "Target": "/x", "Type": "bind"}],
            },
        })
    );
    // Only the ping and the create call were made: no pull, no other endpoint.
    let requests: Vec<String> = referee
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        requests,
        ["HEAD /_ping".to_string(), format!("POST {}", recorded.path)]
    );
}

#[test]
fn smoke_name_query_pass_through_env_and_detached_run() {
    if !require_docker_cli("smoke_name_query_pass_through_env_and_detached_run") {
        return;
    }
    let referee = Referee::start_with_api_version("1.41").expect("start the referee");
    let argv = strings(&[
        "docker",
        "run",
        "--detach",
        "--rm",
        "--interactive",
        "--name",
        "agentc a/b",
        "--env",
        "TOKEN",
        "--env",
        "UNSET_VAR",
        "img",
        "--detach",
    ]);
    let extra = [("TOKEN".to_string(), "s3cret".to_string())];
    let recorded = referee
        .run_as_create(&argv, &extra)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(recorded.path, "/v1.41/containers/create");
    assert_eq!(
        recorded.query.get("name").map(String::as_str),
        Some("agentc a/b")
    );
    let body = &recorded.body;
    // The CLI reads a pass-through value from its own environment; an unset one stays bare.
    // It rebuilds Env through a Go map, so the order varies from run to run: compare sorted.
    let mut env: Vec<&str> = body["Env"]
        .as_array()
        .expect("Env is an array")
        .iter()
        .map(|v| v.as_str().expect("Env entries are strings"))
        .collect();
    env.sort_unstable();
    assert_eq!(env, ["TOKEN=s3cret", "UNSET_VAR"]);
    assert_eq!(body["Cmd"], json!(["--detach"]));
    assert_eq!(body["HostConfig"]["AutoRemove"], json!(true));
    assert_eq!(body["OpenStdin"], json!(true));
    for key in ["AttachStdin", "AttachStdout", "AttachStderr", "StdinOnce"] {
        assert_eq!(body[key], json!(false), "{key}");
    }
}

#[test]
fn docker_errors_carry_stderr() {
    if !require_docker_cli("docker_errors_carry_stderr") {
        return;
    }
    let referee = Referee::start().expect("start the referee");
    let error = referee
        .create(&strings(&["--memory=lots", "img"]), &[])
        .expect_err("an invalid memory size must fail");
    let text = error.to_string();
    assert!(text.contains("docker create failed"), "{text}");
    assert!(text.contains("lots"), "{text}");
}
