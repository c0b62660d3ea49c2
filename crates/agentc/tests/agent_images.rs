//! Live tests of agentc's bundled agent images (issue 39): each of the four presets' images
//! built from a local base (`scripts/build-agent-base.sh`: Debian from this machine's mirror,
//! with Node.js, npm and Python) and a stub package of the agent's real name and executable,
//! through `agentc image context` + `docker build` and through `agentc build`; then `agentc
//! verify` of the preset's profile, and `agentc run PROFILE -- --version --fetch=api.test`:
//! the stub reports its arguments, its ids and capabilities, what it can write, and fetches
//! `https://api.test/` through agentc's egress proxy (trusting the launch CA from the
//! environment alone), with the key held by the proxy.
//!
//! The outside is an `--internal` network of the test's own, where a Python server answers
//! HTTPS as `api.test` with a certificate of a test root (the profile's `proxy.ca_file`) and
//! logs the `x-api-key` it receives. Network rule: these tests connect only to containers and
//! networks they created.
//!
//! Needs the daemon and the base image (made by `.ci/run`; made here when missing, which needs
//! root and Debian's mirror): skips with a printed reason without them, fails instead when
//! `AGENTC_REQUIRE_DOCKER=1`.

use crate::common;
use crate::common::agent_base;
use crate::common::lab;

use std::time::{Duration, Instant};

use agent_base::{base_image, stub_package};
use common::{describe, docker, require_daemon, text};
use lab::Lab;

/// The key of the tests, given to agentc in its environment; never inside the sandbox.
const REAL_KEY: &str = "sk-test-REALKEY-images-0123456789";
const KEY_VARIABLE: &str = "AGENTC_IMAGES_KEY";

/// The Python server of the outside: HTTPS on 443 as whatever name it is reached by, each
/// request logged as `SEEN PATH KEY`, answered `hello-from-upstream`.
const SERVER: &str = r#"import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print('SEEN', self.path, self.headers.get('x-api-key', ''), flush=True)
        body = b'hello-from-upstream'
        self.send_response(200)
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(('0.0.0.0', 443), H)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain('/certs/cert.pem', '/certs/key.pem')
server.socket = context.wrap_socket(server.socket, server_side=True)
print('READY', flush=True)
server.serve_forever()
"#;

/// The outside of one test: the lab's network with the HTTPS server as `api.test`, and the
/// test root the proxy trusts for it (`test-root.pem` in the lab's directory).
struct Server {
    name: String,
    subnet: String,
}

impl Server {
    fn start(lab: &Lab, base: &str) -> Server {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "agentc images test root");
        let root_key = rcgen::KeyPair::generate().unwrap();
        let root = params.self_signed(&root_key).unwrap();
        let issuer = rcgen::Issuer::new(params, root_key);
        let leaf_params = rcgen::CertificateParams::new(vec!["api.test".to_string()]).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
        let dir = lab.dir.path();
        std::fs::write(dir.join("test-root.pem"), root.pem()).unwrap();
        let certs = dir.join("certs");
        std::fs::create_dir_all(&certs).unwrap();
        std::fs::write(certs.join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(certs.join("key.pem"), leaf_key.serialize_pem()).unwrap();
        std::fs::write(certs.join("server.py"), SERVER).unwrap();
        let name = format!("{}-server", lab.id);
        docker(&[
            "run",
            "--detach",
            &format!("--name={name}"),
            &format!("--network={}", lab.out),
            "--network-alias=api.test",
            "-v",
            &format!("{}:/certs:ro", certs.display()),
            base,
            "python3",
            "-u",
            "/certs/server.py",
        ])
        .expect("start the server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !docker(&["logs", &name])
            .unwrap_or_default()
            .contains("READY")
        {
            assert!(Instant::now() < deadline, "the server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let subnet = docker(&[
            "network",
            "inspect",
            &lab.out,
            "--format",
            "{{(index .IPAM.Config 0).Subnet}}",
        ])
        .unwrap();
        Server { name, subnet }
    }

    fn seen(&self) -> String {
        docker(&["logs", &self.name]).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = docker(&["rm", "--force", &self.name]);
    }
}

/// Removes the test's images when it ends.
struct Images(Vec<String>);

impl Drop for Images {
    fn drop(&mut self) {
        for image in &self.0 {
            let _ = docker(&["image", "rm", "--force", image]);
        }
    }
}

/// The uid and gid the bundled image is built for by this user: its own, 1000 for root.
fn agent_ids() -> (u32, u32) {
    // SAFETY: getuid and getgid cannot fail and have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let (uid, gid, _) = agentc_policy::presets::build_ids(uid, gid);
    (uid, gid)
}

/// The agent a preset's name (`claude-code`) names.
fn agent_name(agent: &str) -> agentc_policy::AgentName {
    agentc_lifecycle::images::AGENT_IMAGES
        .iter()
        .find(|image| image.agent.as_str() == agent)
        .expect("a bundled image")
        .agent
}

fn label(image: &str, key: &str) -> String {
    docker(&[
        "image",
        "inspect",
        "--format",
        &format!("{{{{index .Config.Labels \"{key}\"}}}}"),
        image,
    ])
    .unwrap_or_default()
}

/// Builds `agent`'s bundled image both ways, verifies the preset's profile, runs the stub
/// behind the proxy and checks what it reports.
fn a_bundled_image_builds_and_runs_hardened(agent: &str) {
    let test = format!("a_bundled_{agent}_image_builds_and_runs_hardened");
    if !require_daemon(&test) {
        return;
    }
    let Some(base) = base_image(&test) else {
        return;
    };
    let mut lab = Lab::new("images", agent);
    let server = Server::start(&lab, &base);
    let dir = lab.dir.path().to_path_buf();
    let package = stub_package(agent, &dir, &base);
    let suffix = format!("{}-{}", std::process::id(), agent);
    let by_context = format!("agentc-test/agent-image:{suffix}-context");
    let by_build = format!("agentc-test/agent-image:{suffix}-build");
    let _images = Images(vec![by_context.clone(), by_build.clone()]);
    let (uid, gid) = agent_ids();

    // 1. `agentc image context` writes the context; `docker build` builds it.
    let context = dir.join("context");
    let context_text = context.to_string_lossy().into_owned();
    let written = lab.agentc(&["image", "context", agent, &context_text], &[]);
    assert!(written.status.success(), "{}", describe(&written));
    assert!(
        text(&written.stdout).contains("wrote "),
        "{}",
        describe(&written)
    );
    let again = lab.agentc(&["image", "context", agent, &context_text], &[]);
    assert_eq!(again.status.code(), Some(1), "{}", describe(&again));
    assert!(
        text(&again.stderr).contains("is not empty"),
        "{}",
        describe(&again)
    );
    std::fs::copy(dir.join(&package), context.join("packages").join(&package)).unwrap();
    docker(&[
        "build",
        "-q",
        "--force-rm",
        "-t",
        &by_context,
        "--build-arg",
        &format!("BASE_IMAGE={base}"),
        "--build-arg",
        &format!("AGENT_PACKAGE=packages/{package}"),
        "--build-arg",
        &format!("UID={uid}"),
        "--build-arg",
        &format!("GID={gid}"),
        &context_text,
    ])
    .expect("docker build of the written context");

    // 2. `agentc build` of the preset's profile, the package a file of this machine.
    let (profile, path) = lab.write_profile(
        "agent",
        &format!(
            "agent = \"{agent}\"\n\n[image]\nref = \"{by_build}\"\n\n\
             [proxy]\nca_file = \"test-root.pem\"\n\n\
             [egress]\nhosts = [\"api.test\"]\noutside_network = \"{}\"\nallow_cidrs = [\"{}\"]\n\n\
             [credentials.api]\nfrom_env = \"{KEY_VARIABLE}\"\nhosts = [\"api.test\"]\n\
             header = \"x-api-key\"\nprefix = \"sk-test-\"\n",
            lab.out, server.subnet
        ),
    );
    let built = lab.agentc(
        &[
            "build",
            &path,
            "--build-arg",
            &format!("BASE_IMAGE={base}"),
            "--build-arg",
            &format!("AGENT_PACKAGE={}", dir.join(&package).display()),
        ],
        &[],
    );
    assert!(built.status.success(), "{}", describe(&built));
    let stderr = text(&built.stderr);
    assert!(
        stderr.contains(&format!("from agentc's bundled {agent} context")),
        "{stderr}"
    );
    assert_eq!(
        stderr.contains("building as root"),
        unsafe { libc::getuid() } == 0,
        "{stderr}"
    );
    assert!(text(&built.stdout).contains(&format!("built {by_build}")));

    for image in [&by_context, &by_build] {
        assert_eq!(label(image, "io.agentc.image.agent"), agent, "{image}");
        assert_eq!(label(image, "io.agentc.image.firewall"), "none", "{image}");
        assert_eq!(label(image, "io.agentc.image.user"), format!("{uid}:{gid}"));
        assert_eq!(
            label(image, "io.agentc.image.package"),
            format!("packages/{package}")
        );
        // No setuid or setgid file is left, and the image runs as the agent user.
        let privileged = docker(&[
            "run",
            "--rm",
            "--network=none",
            "--user=0:0",
            "--entrypoint=find",
            image,
            "/",
            "-xdev",
            "-type",
            "f",
            "-perm",
            "/6000",
        ])
        .expect("find setuid files");
        assert_eq!(privileged, "", "{image}: setuid or setgid files");
        let user = docker(&["image", "inspect", "--format", "{{.Config.User}}", image]).unwrap();
        assert_eq!(user, format!("{uid}:{gid}"));
    }
    let digest = agentc_lifecycle::images::build_context(agent_name(agent))
        .unwrap()
        .digest();
    assert_eq!(label(&by_build, "io.agentc.image.context"), digest);

    // 3. `agentc verify` of the profile: every row holds, /tmp and /run written by the agent.
    let verified = lab.agentc(&["verify", &path], &[(KEY_VARIABLE, REAL_KEY)]);
    assert!(verified.status.success(), "{}", describe(&verified));
    let report = text(&verified.stdout);
    for row in [
        "tmpfs /tmp",
        "tmpfs /run",
        "root filesystem",
        "effective capabilities",
    ] {
        let line = report
            .lines()
            .find(|line| line.contains(row))
            .unwrap_or_else(|| panic!("no {row} row in {report}"));
        assert!(line.starts_with("ok"), "{line}");
    }

    // 4. `agentc run PROFILE -- --version`: the stub as the agent user behind the proxy, for
    // both images.
    for image in [&by_build, &by_context] {
        let run = lab.agentc(
            &[
                "run",
                "--image",
                image,
                &path,
                "--",
                "--version",
                "--fetch=api.test",
            ],
            &[(KEY_VARIABLE, REAL_KEY)],
        );
        let out = text(&run.stdout);
        assert!(run.status.success(), "{image}: {}", describe(&run));
        assert!(
            out.contains(&format!(
                "STUB args=[\"--version\",\"--fetch=api.test\"] uid={uid} gid={gid} capeff=0000000000000000"
            )),
            "{image}: {out}"
        );
        for line in ["WRITE /tmp ok", "WRITE /run ok", "WRITE / EROFS"] {
            assert!(out.contains(line), "{image}: {line} in {out}");
        }
        let home = agentc_policy::presets::preset(agent_name(agent))
            .unwrap()
            .home_path;
        assert!(out.contains(&format!("WRITE {home} ok")), "{image}: {out}");
        assert!(out.contains("TLS verified"), "{image}: {out}");
        assert!(
            out.contains("HTTP 200 hello-from-upstream"),
            "{image}: {out}"
        );
        assert!(
            !out.contains(REAL_KEY) && !text(&run.stderr).contains(REAL_KEY),
            "{image}: the key reached the sandbox's output"
        );
    }
    // The server received the real key, put in by the proxy, for both runs.
    let seen = server.seen();
    assert_eq!(
        seen.matches(&format!("SEEN /stub {REAL_KEY}")).count(),
        2,
        "{seen}"
    );
    // Attached runs end with their companions removed: only the home volume is kept.
    let left = lab.left(&profile);
    assert!(
        left.iter().all(|left| left.starts_with("volume ")),
        "a run left containers or networks: {left:?}"
    );
}

#[test]
fn live_the_bundled_claude_code_image_builds_and_runs_hardened() {
    let _turn = crate::common::turn(file!());
    a_bundled_image_builds_and_runs_hardened("claude-code");
}

#[test]
fn live_the_bundled_codex_image_builds_and_runs_hardened() {
    let _turn = crate::common::turn(file!());
    a_bundled_image_builds_and_runs_hardened("codex");
}

#[test]
fn live_the_bundled_opencode_image_builds_and_runs_hardened() {
    let _turn = crate::common::turn(file!());
    a_bundled_image_builds_and_runs_hardened("opencode");
}

#[test]
fn live_the_bundled_hermes_image_builds_and_runs_hardened() {
    let _turn = crate::common::turn(file!());
    a_bundled_image_builds_and_runs_hardened("hermes");
}

/// An image whose `/run` is root's 0755, run as a non-root user: where the runtime gives the
/// tmpfs the directory's mode over agentc's `mode=1777` (runc before 1.1.8), the user cannot
/// write it and `verify`'s row fails; where the runtime honours the mode, the row holds. The
/// referee is a plain `docker run` of the same mount as that user.
#[test]
fn live_verify_fails_a_tmpfs_the_agent_user_cannot_write() {
    let _turn = crate::common::turn(file!());
    let test = "live_verify_fails_a_tmpfs_the_agent_user_cannot_write";
    if !require_daemon(test) {
        return;
    }
    let mut lab = Lab::new("images", "runmode");
    let tag = format!("agentc-test/narrow-run:{}", std::process::id());
    let _images = Images(vec![tag.clone()]);
    let context = lab.dir.path().join("narrow");
    std::fs::create_dir_all(&context).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        format!("FROM {}\nRUN chmod 0755 /run\n", common::test_image()),
    )
    .unwrap();
    docker(&[
        "build",
        "-q",
        "--force-rm",
        "-t",
        &tag,
        &context.to_string_lossy(),
    ])
    .expect("build the narrow image");
    let writable = docker(&[
        "run",
        "--rm",
        "--network=none",
        "--read-only",
        "--user=1000:1000",
        "--tmpfs=/run:mode=1777",
        &tag,
        "sh",
        "-c",
        "touch /run/x",
    ])
    .is_ok();
    let (_, path) = lab.write_profile(
        "narrow",
        &format!(
            "agent = \"custom\"\n\n[image]\nref = \"{tag}\"\nuser = \"1000:1000\"\n\
             command = [\"tail\", \"-f\", \"/dev/null\"]\n\n[egress]\nmode = \"deny\"\n"
        ),
    );
    let verified = lab.agentc(&["verify", &path], &[]);
    let report = text(&verified.stdout);
    let row = report
        .lines()
        .find(|line| line.contains("tmpfs /run"))
        .unwrap_or_else(|| panic!("no tmpfs /run row: {}", describe(&verified)));
    if writable {
        assert!(row.starts_with("ok"), "{row}");
        assert_eq!(verified.status.code(), Some(0), "{}", describe(&verified));
    } else {
        assert!(row.starts_with("FAIL"), "{row}");
        assert!(row.contains("write refused"), "{row}");
        assert_eq!(verified.status.code(), Some(1), "{}", describe(&verified));
    }
}

/// A bundled build on a base without the agent's runtime (the busybox test image: no npm, no
/// useradd) fails in its install step: agentc exits with docker build's status, says how to
/// build without the registries, and the failed step leaves no container (`--force-rm`).
#[test]
fn live_a_failed_bundled_build_says_how_and_leaves_no_container() {
    let _turn = crate::common::turn(file!());
    let test = "live_a_failed_bundled_build_says_how_and_leaves_no_container";
    if !require_daemon(test) {
        return;
    }
    let mut lab = Lab::new("images", "failed");
    let tag = format!("agentc-test/failed-build:{}", std::process::id());
    let _images = Images(vec![tag.clone()]);
    let (_, path) = lab.write_profile(
        "failed",
        &format!("agent = \"codex\"\n\n[image]\nref = \"{tag}\"\n"),
    );
    // The failed step's container would run the install step on the test image; no other
    // test does.
    let base = common::test_image();
    let install_steps = || {
        docker(&[
            "ps",
            "-a",
            "--no-trunc",
            "--filter",
            &format!("ancestor={base}"),
            "--format",
            "{{.Command}}",
        ])
        .unwrap_or_default()
        .lines()
        .filter(|command| command.contains("agentc-install.sh"))
        .count()
    };
    let built = lab.agentc(
        &["build", &path, "--build-arg", &format!("BASE_IMAGE={base}")],
        &[],
    );
    // The install step's shell finds no npm (127): docker build's status is agentc's.
    let code = built.status.code().unwrap_or_default();
    assert_ne!(code, 0, "{}", describe(&built));
    let stderr = text(&built.stderr);
    assert!(
        stderr.contains(&format!(
            "agentc: the bundled build failed (docker build exited {code})"
        )) && stderr.contains("--build-arg BASE_IMAGE=IMAGE (one with Node.js and npm)"),
        "{stderr}"
    );
    assert!(docker(&["image", "inspect", &tag]).is_err());
    assert_eq!(install_steps(), 0, "the failed step's container was kept");
}
