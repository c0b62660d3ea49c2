//! `agentc serve --stdio` on the live daemon, through both backends (a module of the `live`
//! test binary): every method against a sandbox of the test's own, the protocol's errors (the
//! server goes on), and its end (stdin closed by a client that died, SIGTERM) with an exec in
//! flight: the sandboxes it created without `keep` are gone, a kept one stays.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::{docker, require_daemon, test_image};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(value: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(value.as_str().expect("base64 text"))
        .expect("base64")
}

/// A running `agentc serve --stdio`: requests by id, the lines it wrote collected by a thread.
struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Notifications seen so far.
    notes: Vec<Value>,
    /// Answers read while waiting for another, by id.
    early: std::collections::HashMap<String, Value>,
    next: u64,
}

impl Served {
    fn start(dir: &Path, backend: &str) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentc"))
            .args(["serve", "--stdio", "--backend", backend])
            .current_dir(dir)
            .env("USER", "serve")
            .env("AGENTC_STATE_DIR", dir.join("state"))
            .env_remove("AGENTC_NETWORK")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("agentc serve starts");
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|error| {
                    panic!("serve wrote a line that is not JSON ({error}): {line}")
                });
                if send.send(value).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Served {
            child,
            stdin,
            lines,
            notes: Vec::new(),
            early: std::collections::HashMap::new(),
            next: 1,
        }
    }

    fn write(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request; its id.
    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next;
        self.next += 1;
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.write(&line.to_string());
        id
    }

    /// The answer to `id` (the whole message), keeping the notifications and the other
    /// answers that come first.
    fn answer(&mut self, id: &Value) -> Value {
        if let Some(answer) = self.early.remove(&id.to_string()) {
            return answer;
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.lines.recv_timeout(left) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {id} in 120 s"),
                Err(RecvTimeoutError::Disconnected) => panic!("serve ended before answering {id}"),
            };
            if message.get("id") == Some(id) {
                return message;
            }
            if let Some(other) = message.get("id") {
                let other = other.to_string();
                self.early.insert(other, message);
                continue;
            }
            assert_eq!(
                message["method"], "exec.output",
                "an unexpected message: {message}"
            );
            self.notes.push(message);
        }
    }

    /// Calls `method`: its result, or a panic with the error.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params.clone());
        let answer = self.answer(&json!(id));
        assert!(
            answer.get("error").is_none(),
            "{method} {params} failed: {answer}"
        );
        assert_eq!(answer["jsonrpc"], "2.0");
        answer["result"].clone()
    }

    /// Calls `method` expecting an error: the error object.
    fn fails(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params.clone());
        let answer = self.answer(&json!(id));
        assert!(
            answer.get("result").is_none(),
            "{method} {params} succeeded: {answer}"
        );
        answer["error"].clone()
    }

    /// Closes stdin and waits (at most `limit`) for the exit status.
    fn close(mut self, limit: Duration) -> Option<i32> {
        drop(self.stdin.take());
        wait(&mut self.child, limit)
    }
}

fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A test's profile, its directory, and the removal of what is left on drop.
struct ServeLab {
    profile: String,
    dir: tempfile::TempDir,
}

impl ServeLab {
    fn new(test: &str, image: &str) -> ServeLab {
        let lab = ServeLab {
            profile: format!("serve-{test}-{}", std::process::id()),
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::write(
            lab.dir.path().join("box.toml"),
            format!(
                "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{image}\"\ncommand = [\"sh\", \"-c\", \"echo started; exec tail -f /dev/null\"]\n",
                lab.profile
            ),
        )
        .unwrap();
        lab
    }

    fn profile_path(&self) -> String {
        self.dir.path().join("box.toml").display().to_string()
    }

    fn containers(&self) -> Vec<String> {
        let filter = format!("label=io.agentc.profile={}", self.profile);
        docker(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for ServeLab {
    fn drop(&mut self) {
        for container in self.containers() {
            let _ = docker(&["rm", "--force", &container]);
        }
        let snapshots = format!("agentc-snapshot/{}", self.profile);
        for image in docker(&["images", "--format", "{{.Repository}}:{{.Tag}}", &snapshots])
            .unwrap_or_default()
            .lines()
        {
            let _ = docker(&["image", "rm", "--force", image]);
        }
    }
}

fn every_method(backend: &str) {
    let image = test_image();
    let lab = ServeLab::new(&format!("all-{backend}"), &image);
    let workspace = lab.dir.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    // The sandbox runs as root without capabilities: the directory must be root's own.
    let mut server = Served::start(lab.dir.path(), backend);
    let hello = server.call("initialize", json!({}));
    assert_eq!(hello["protocol"], 1);
    assert_eq!(hello["backend"], backend);

    let created = server.call(
        "create",
        json!({
            "profile": lab.profile_path(),
            // A port asked for twice counts once.
            "publish": [8080, 8080],
            "mounts": [{ "source": workspace.display().to_string(), "target": "/workspace", "read_only": false }],
            "env": { "SESSION_VAR": "from-create" },
        }),
    );
    let name = created["sandbox"]["name"].as_str().unwrap().to_string();
    assert_eq!(lab.containers(), vec![name.clone()]);
    let codes: Vec<&str> = created["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"egress-unenforced"), "{codes:?}");
    assert!(
        codes.contains(&"bind-writable") || codes.iter().any(|code| code.contains("writable")),
        "{codes:?}"
    );

    // exec: the exit code, the session's environment under the request's, the hardening.
    let ran = server.call(
        "exec",
        json!({ "sandbox": name, "argv": ["sh", "-c", "echo $SESSION_VAR $OWN; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch /x 2>/dev/null || echo read-only; exit 3"], "env": { "OWN": "mine" } }),
    );
    assert_eq!(ran["exit_code"], 3);
    assert_eq!(ran["timed_out"], false);
    assert_eq!(
        String::from_utf8(unb64(&ran["stdout"])).unwrap(),
        "from-create mine\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\nread-only\n"
    );

    // A streamed exec: its output as notifications, in order, then the exit code.
    let streamed = server.call(
        "exec",
        json!({ "sandbox": name, "shell": "for i in 1 2 3; do echo out$i; sleep 0.05; done; echo err >&2", "stream": true }),
    );
    assert_eq!(streamed["exit_code"], 0);
    assert!(unb64(&streamed["stdout"]).is_empty());
    let mut out = Vec::new();
    let mut err = Vec::new();
    for note in server.notes.drain(..) {
        let bytes = unb64(&note["params"]["data"]);
        match note["params"]["stream"].as_str() {
            Some("stdout") => out.extend(bytes),
            Some("stderr") => err.extend(bytes),
            other => panic!("a stream {other:?}"),
        }
    }
    assert_eq!(out, b"out1\nout2\nout3\n");
    assert_eq!(err, b"err\n");

    // A timeout stops the command's processes.
    let started = Instant::now();
    let timed = server.call(
        "exec",
        json!({ "sandbox": name, "argv": ["sleep", "300"], "timeout": 0.5 }),
    );
    assert_eq!(timed["timed_out"], true);
    assert_eq!(timed["exit_code"], Value::Null);
    assert!(started.elapsed() < Duration::from_secs(30));
    let left = server.call("exec", json!({ "sandbox": name, "shell": "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done | grep -c '^sleep 300' || true" }));
    assert_eq!(
        String::from_utf8(unb64(&left["stdout"])).unwrap().trim(),
        "0"
    );

    // cancel: the exec answers cancelled, its processes stopped; an id not in flight is not.
    let slow = server.send(
        "exec",
        json!({ "sandbox": name, "argv": ["sleep", "301"], "stream": true }),
    );
    std::thread::sleep(Duration::from_millis(500));
    let cancel = server.call("cancel", json!({ "id": slow }));
    assert_eq!(cancel["cancelled"], true);
    let cancelled = server.answer(&json!(slow));
    assert_eq!(cancelled["error"]["code"], -32800, "{cancelled}");
    assert_eq!(cancelled["error"]["data"]["kind"], "cancelled");
    let left = server.call("exec", json!({ "sandbox": name, "shell": "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done | grep -c '^sleep 301' || true" }));
    assert_eq!(
        String::from_utf8(unb64(&left["stdout"])).unwrap().trim(),
        "0"
    );
    assert_eq!(
        server.call("cancel", json!({ "id": slow }))["cancelled"],
        false
    );

    // Files: any bytes, parents made, the mode set; on the bind and on the tmpfs.
    let bytes: Vec<u8> = (0..1024 * 1024).map(|i| (i * 7 % 256) as u8).collect();
    for path in ["/workspace/deep/dir/blob.bin", "/tmp/blob.bin"] {
        let written = server.call(
            "write_file",
            json!({ "sandbox": name, "path": path, "data": b64(&bytes), "mode": 0o600 }),
        );
        assert_eq!(written["bytes"], bytes.len());
        let read = server.call("read_file", json!({ "sandbox": name, "path": path }));
        assert!(unb64(&read["data"]) == bytes, "{path} came back changed");
        let mode = server.call(
            "exec",
            json!({ "sandbox": name, "argv": ["stat", "-c", "%a", path] }),
        );
        assert_eq!(
            String::from_utf8(unb64(&mode["stdout"])).unwrap().trim(),
            "600"
        );
    }
    assert_eq!(
        std::fs::read(workspace.join("deep/dir/blob.bin")).unwrap(),
        bytes
    );
    let missing = server.fails(
        "read_file",
        json!({ "sandbox": name, "path": "/workspace/none" }),
    );
    assert_eq!(missing["code"], -32000);
    assert_eq!(missing["data"]["kind"], "not_found");
    assert_eq!(missing["data"]["exit_code"], 1);
    let directory = server.fails(
        "read_file",
        json!({ "sandbox": name, "path": "/workspace" }),
    );
    assert_eq!(directory["data"]["kind"], "invalid");
    let root = server.fails(
        "write_file",
        json!({ "sandbox": name, "path": "/etc/x", "data": b64(b"x") }),
    );
    assert_eq!(root["data"]["kind"], "failed", "{root}");
    let relative = server.fails(
        "read_file",
        json!({ "sandbox": name, "path": "etc/passwd" }),
    );
    assert_eq!(relative["data"]["exit_code"], 65);

    // Tars: a directory out and into another.
    let tar = server.call("read_tar", json!({ "sandbox": name, "path": "/workspace" }));
    let tar = unb64(&tar["data"]);
    server.call(
        "write_tar",
        json!({ "sandbox": name, "path": "/tmp/copy", "data": b64(&tar) }),
    );
    let copied = server.call(
        "read_file",
        json!({ "sandbox": name, "path": "/tmp/copy/deep/dir/blob.bin" }),
    );
    assert!(unb64(&copied["data"]) == bytes);
    for (path, link) in [("a/../../../escape", None), ("out", Some("/etc"))] {
        let mut hostile = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_size(0);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        if let Some(link) = link {
            header.set_entry_type(tar::EntryType::Symlink);
            header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_cksum();
        hostile.append(&header, std::io::empty()).unwrap();
        let refused = server.fails("write_tar", json!({ "sandbox": name, "path": "/tmp/h", "data": b64(&hostile.into_inner().unwrap()) }));
        assert_eq!(refused["data"]["exit_code"], 65, "{refused}");
    }

    // endpoint: a server in the sandbox reached from here.
    server.call("exec", json!({ "sandbox": name, "shell": "mkdir -p /tmp/www && echo page > /tmp/www/index.html && httpd -p 8080 -h /tmp/www" }));
    let endpoint = server.call("endpoint", json!({ "sandbox": name, "port": 8080 }));
    assert_eq!(endpoint["host"], "127.0.0.1");
    let address = format!("127.0.0.1:{}", endpoint["port"]);
    let mut page = String::new();
    let mut stream = TcpStream::connect(&address).unwrap();
    stream.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    std::io::Read::read_to_string(&mut stream, &mut page).unwrap();
    assert!(page.ends_with("page\n"), "{page}");
    let unpublished = server.fails("endpoint", json!({ "sandbox": name, "port": 9 }));
    assert_eq!(unpublished["code"], -32000);

    // logs, running.
    let logs = server.call("logs", json!({ "sandbox": name }));
    assert_eq!(unb64(&logs["stdout"]), b"started\n");
    assert_eq!(
        server.call("running", json!({ "sandbox": name }))["running"],
        true
    );

    // attach from a second server, which keeps what it did not create.
    let mut second = Served::start(lab.dir.path(), backend);
    let attached = second.call("attach", json!({ "sandbox": name }));
    assert_eq!(attached["running"], true);
    let echoed = second.call(
        "exec",
        json!({ "sandbox": name, "argv": ["cat", "/tmp/www/index.html"] }),
    );
    assert_eq!(unb64(&echoed["stdout"]), b"page\n");
    assert_eq!(second.close(Duration::from_secs(30)), Some(0));
    assert_eq!(lab.containers(), vec![name.clone()], "attach kept it");

    // verify: the profile's launch probed beside the session, nothing of it left.
    let verified = server.call("verify", json!({ "profile": lab.profile_path() }));
    assert_eq!(verified["passed"], true, "{verified}");
    let checks = verified["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|check| check["check"] == "root filesystem" && check["status"] == "ok"),
        "{verified}"
    );
    assert_eq!(lab.containers(), vec![name.clone()], "the probe is gone");

    // A container agentc did not create is refused.
    let foreign = server.fails(
        "exec",
        json!({ "sandbox": "no-such-sandbox-here", "argv": ["true"] }),
    );
    assert_eq!(foreign["data"]["kind"], "not_found", "{foreign}");

    let deleted = server.call("delete", json!({ "sandbox": name }));
    assert_eq!(deleted["removed"], true);
    assert_eq!(deleted["left"], json!([]));
    assert!(lab.containers().is_empty());
    let shutdown = server.call("shutdown", json!({}));
    assert_eq!(shutdown["deleted"], json!([]));
    assert_eq!(wait(&mut server.child, Duration::from_secs(30)), Some(0));
}

#[test]
fn live_serve_every_method_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("live_serve_every_method_through_the_api_backend") {
        every_method("api");
    }
}

#[test]
fn live_serve_every_method_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("live_serve_every_method_through_the_cli_backend") {
        every_method("cli");
    }
}

fn contents(server: &mut Served, name: &str, path: &str) -> String {
    let read = server.call("read_file", json!({ "sandbox": name, "path": path }));
    String::from_utf8(unb64(&read["data"])).unwrap()
}

#[test]
fn live_serve_snapshots_restores_and_forks() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_serve_snapshots_restores_and_forks") {
        return;
    }
    let image = test_image();
    let lab = ServeLab::new("snap", &image);
    let mut server = Served::start(lab.dir.path(), "api");
    let created = server.call("create", json!({ "profile": lab.profile_path() }));
    let parent = created["sandbox"]["name"].as_str().unwrap().to_string();
    server.call(
        "write_file",
        json!({ "sandbox": parent, "path": "/tmp/state.txt", "data": b64(b"before") }),
    );
    let taken = server.call("snapshot", json!({ "sandbox": parent, "tag": "one" }));
    assert_eq!(taken["snapshot"], format!("{}:one", lab.profile));
    server.call(
        "write_file",
        json!({ "sandbox": parent, "path": "/tmp/state.txt", "data": b64(b"after") }),
    );

    let restored = server.call("restore", json!({ "snapshot": taken["snapshot"] }));
    let restored = restored["sandbox"]["name"].as_str().unwrap().to_string();
    assert_ne!(restored, parent);
    assert_eq!(contents(&mut server, &restored, "/tmp/state.txt"), "before");
    assert_eq!(contents(&mut server, &parent, "/tmp/state.txt"), "after");

    let forked = server.call(
        "fork",
        json!({ "sandbox": parent, "count": 2, "tag": "two" }),
    );
    let forks: Vec<String> = forked["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|sandbox| sandbox["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(forks.len(), 2);
    server.call(
        "write_file",
        json!({ "sandbox": forks[0], "path": "/tmp/state.txt", "data": b64(b"fork 0") }),
    );
    assert_eq!(contents(&mut server, &forks[0], "/tmp/state.txt"), "fork 0");
    assert_eq!(contents(&mut server, &forks[1], "/tmp/state.txt"), "after");
    let mut expected = vec![
        parent.clone(),
        restored.clone(),
        forks[0].clone(),
        forks[1].clone(),
    ];
    expected.sort();
    let mut containers = lab.containers();
    containers.sort();
    assert_eq!(containers, expected);

    let missing = server.fails("restore", json!({ "snapshot": "no-such-snapshot-tag" }));
    assert_eq!(missing["code"], -32000, "{missing}");
    let text = server.call("create", json!({ "profile_text": std::fs::read_to_string(lab.profile_path()).unwrap(), "name": format!("{}-text", lab.profile) }));
    let unrecorded = server.fails("snapshot", json!({ "sandbox": text["sandbox"]["name"] }));
    assert!(
        unrecorded["message"]
            .as_str()
            .unwrap()
            .contains("records no profile file"),
        "{unrecorded}"
    );

    // Everything the server made goes when it ends.
    assert_eq!(server.close(Duration::from_secs(60)), Some(0));
    assert!(lab.containers().is_empty(), "{:?}", lab.containers());
}

/// The runner and a plain exec give the same results; a runner stays in step after a timeout
/// and a cancel, and one killed from inside is replaced.
fn runner_matches_plain_execs(backend: &str) {
    let image = test_image();
    let lab = ServeLab::new(&format!("runner-{backend}"), &image);
    let mut server = Served::start(lab.dir.path(), backend);
    let with = server.call(
        "create",
        json!({ "profile": lab.profile_path(), "env": { "SESSION": "s v" } }),
    );
    let without = server.call(
        "create",
        json!({ "profile": lab.profile_path(), "env": { "SESSION": "s v" }, "runner": false }),
    );
    let with = with["sandbox"]["name"].as_str().unwrap().to_string();
    let without = without["sandbox"]["name"].as_str().unwrap().to_string();
    let requests = [
        json!({ "argv": ["sh", "-c", "printf 'a\\000b'; echo err >&2; exit 7"] }),
        json!({ "argv": ["pwd"], "cwd": "/tmp" }),
        json!({ "shell": "echo \"$SESSION|$OWN\"; echo 'quote'\\''s'", "env": { "OWN": "it's $x" } }),
        json!({ "argv": ["id", "-u"], "user": "1000" }),
        json!({ "shell": "i=0; while [ $i -lt 4000 ]; do echo line $i of some output; i=$((i+1)); done" }),
        json!({ "argv": ["cat", "/no/such/file"] }),
        json!({ "shell": "exit 0" }),
        // Stdin, any bytes: through the runner as a printf of them.
        json!({ "argv": ["sh", "-c", "cat; echo; wc -c"], "stdin": b64(b"line\n\0bin\xff'%s\\n\"q\"") }),
        json!({ "argv": ["wc", "-c"], "stdin": b64(&vec![b'%'; 40_000]) }),
    ];
    for request in &requests {
        let mut answers = Vec::new();
        for name in [&with, &without] {
            let mut params = request.clone();
            params["sandbox"] = json!(name);
            let ran = server.call("exec", params);
            answers.push((
                ran["exit_code"].clone(),
                unb64(&ran["stdout"]),
                unb64(&ran["stderr"]),
            ));
        }
        assert!(
            answers[0] == answers[1],
            "{request}: runner {:?} against plain {:?}",
            answers[0],
            answers[1]
        );
    }
    // Side by side: a long command does not hold up the session's others.
    let long = server.send("exec", json!({ "sandbox": with, "argv": ["sleep", "3"] }));
    let started = Instant::now();
    let quick: Vec<u64> = (0..6)
        .map(|i| {
            server.send(
                "exec",
                json!({ "sandbox": with, "argv": ["echo", i.to_string()] }),
            )
        })
        .collect();
    for (i, id) in quick.iter().enumerate() {
        let answer = server.answer(&json!(id));
        assert_eq!(
            unb64(&answer["result"]["stdout"]),
            format!("{i}\n").as_bytes()
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.answer(&json!(long))["result"]["exit_code"], 0);

    // In step after a timeout and a cancel.
    let timed = server.call(
        "exec",
        json!({ "sandbox": with, "argv": ["sleep", "302"], "timeout": 0.5 }),
    );
    assert_eq!(timed["timed_out"], true);
    let slow = server.send("exec", json!({ "sandbox": with, "argv": ["sleep", "303"] }));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        server.call("cancel", json!({ "id": slow }))["cancelled"],
        true
    );
    assert_eq!(server.answer(&json!(slow))["error"]["code"], -32800);
    let after = server.call(
        "exec",
        json!({ "sandbox": with, "argv": ["echo", "in step"] }),
    );
    assert_eq!(unb64(&after["stdout"]), b"in step\n");
    let sleeping = server.call("exec", json!({ "sandbox": with, "shell": "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 30[23]' || true" }));
    assert_eq!(
        String::from_utf8(unb64(&sleeping["stdout"]))
            .unwrap()
            .trim(),
        "0"
    );
    // A runner killed from inside the sandbox is replaced (one ran as 1000, one as root).
    let killed = server.call("exec", json!({ "sandbox": with, "shell": "n=0; for p in /proc/[0-9]*; do [ \"${p#/proc/}\" = \"$$\" ] && continue; grep -q agentc-runner $p/cmdline 2>/dev/null && n=$((n+1)); done; exit $n" }));
    // One as 1000; as root, one a command ran beside others (at most four).
    let before = killed["exit_code"].as_i64().unwrap();
    assert!((2..=5).contains(&before), "{before} runners");
    server.call("exec", json!({ "sandbox": with, "stream": true, "shell": "for p in /proc/[0-9]*; do [ \"${p#/proc/}\" = \"$$\" ] && continue; grep -q agentc-runner $p/cmdline 2>/dev/null && kill -KILL ${p#/proc/}; done; true" }));
    server.notes.clear();
    std::thread::sleep(Duration::from_millis(1000));
    let again = server.call(
        "exec",
        json!({ "sandbox": with, "argv": ["echo", "again"] }),
    );
    assert_eq!(unb64(&again["stdout"]), b"again\n");
    assert_eq!(server.close(Duration::from_secs(60)), Some(0));
    assert!(lab.containers().is_empty());
}

#[test]
fn live_serve_runner_matches_plain_execs_through_the_api_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("live_serve_runner_matches_plain_execs_through_the_api_backend") {
        runner_matches_plain_execs("api");
    }
}

#[test]
fn live_serve_runner_matches_plain_execs_through_the_cli_backend() {
    let _turn = crate::common::turn(file!());
    if require_daemon("live_serve_runner_matches_plain_execs_through_the_cli_backend") {
        runner_matches_plain_execs("cli");
    }
}

#[test]
fn live_serve_answers_bad_requests_and_goes_on() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_serve_answers_bad_requests_and_goes_on") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = Served::start(dir.path(), "api");
    let answers = |server: &mut Served, line: &str| {
        server.write(line);
        server
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("an answer")
    };
    let parse = answers(&mut server, "{not json");
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    let version = answers(&mut server, r#"{"id":1,"method":"initialize"}"#);
    assert_eq!(version["error"]["code"], -32600);
    assert_eq!(version["id"], 1);
    let array = answers(&mut server, "[1,2]");
    assert_eq!(array["error"]["code"], -32600);
    let unknown = server.fails("no_such_method", json!({}));
    assert_eq!(unknown["code"], -32601);
    assert!(
        unknown["message"].as_str().unwrap().contains("exec"),
        "{unknown}"
    );
    let params = server.fails("exec", json!({ "sandbox": "x", "argv": "not a list" }));
    assert_eq!(params["code"], -32602);
    let extra = server.fails(
        "read_file",
        json!({ "sandbox": "x", "path": "/a", "bogus": 1 }),
    );
    assert_eq!(extra["code"], -32602);
    assert!(
        extra["message"].as_str().unwrap().contains("bogus"),
        "{extra}"
    );
    let both = server.fails(
        "exec",
        json!({ "sandbox": "x", "argv": ["a"], "shell": "a" }),
    );
    assert_eq!(both["data"]["kind"], "invalid");
    let profile = server.fails(
        "create",
        json!({ "profile_text": "name = \"x\"\nagent = \"custom\"\n[image]\nref = 3\n" }),
    );
    assert_eq!(profile["data"]["exit_code"], 65);
    assert!(
        profile["message"].as_str().unwrap().contains("image.ref"),
        "{profile}"
    );
    let no_file = server.fails("create", json!({ "profile": dir.path().join("none.toml") }));
    assert_eq!(no_file["data"]["exit_code"], 66);
    assert!(no_file["data"]["hint"].is_string(), "{no_file}");
    // A notification (no id) gets no answer; the next request still does.
    server.write(r#"{"jsonrpc":"2.0","method":"initialize"}"#);
    let after = server.call("initialize", json!({}));
    assert_eq!(after["protocol"], 1);
    assert_eq!(server.close(Duration::from_secs(30)), Some(0));
}

/// Ends a server with an exec in flight, as `end` does; the non-kept sandbox must go, the kept
/// one stay.
fn ends_and_cleans(test: &str, end: fn(&mut Served)) {
    let image = test_image();
    let lab = ServeLab::new(test, &image);
    let mut server = Served::start(lab.dir.path(), "api");
    let doomed = server.call(
        "create",
        json!({ "profile": lab.profile_path(), "name": format!("{}-doomed", lab.profile) }),
    );
    let kept = server.call("create", json!({ "profile": lab.profile_path(), "name": format!("{}-kept", lab.profile), "keep": true }));
    let doomed = doomed["sandbox"]["name"].as_str().unwrap().to_string();
    let kept = kept["sandbox"]["name"].as_str().unwrap().to_string();
    let mut containers = lab.containers();
    containers.sort();
    assert_eq!(containers, vec![doomed.clone(), kept.clone()]);
    server.send(
        "exec",
        json!({ "sandbox": kept, "argv": ["sleep", "300"], "stream": true }),
    );
    std::thread::sleep(Duration::from_millis(800));
    end(&mut server);
    let status = wait(&mut server.child, Duration::from_secs(60));
    assert_eq!(status, Some(0));
    assert_eq!(
        lab.containers(),
        vec![kept.clone()],
        "only the kept sandbox is left"
    );
    let sleeping = docker(&["exec", &kept, "sh", "-c", "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 300' || true"]).unwrap();
    assert_eq!(sleeping.trim(), "0", "the exec in flight was stopped");
}

#[test]
fn live_serve_deletes_its_sandboxes_when_its_client_goes() {
    let _turn = crate::common::turn(file!());
    if require_daemon("live_serve_deletes_its_sandboxes_when_its_client_goes") {
        // The client died: its end of the pipe closes.
        ends_and_cleans("stdin", |server| drop(server.stdin.take()));
    }
}

#[test]
fn live_serve_deletes_its_sandboxes_on_sigterm() {
    let _turn = crate::common::turn(file!());
    if require_daemon("live_serve_deletes_its_sandboxes_on_sigterm") {
        ends_and_cleans("sigterm", |server| {
            // SAFETY: kill with a child's PID and a signal number has no other effect.
            unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
        });
    }
}

#[test]
fn serve_publishes_its_schema() {
    let _turn = crate::common::turn(file!());
    let output = Command::new(env!("CARGO_BIN_EXE_agentc"))
        .args(["serve", "--schema"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let schema: Value = serde_json::from_slice(&output.stdout).unwrap();
    let methods = schema["methods"].as_object().unwrap();
    for method in [
        "create",
        "exec",
        "read_file",
        "write_file",
        "read_tar",
        "write_tar",
        "endpoint",
        "logs",
        "running",
        "attach",
        "delete",
        "shutdown",
        "initialize",
    ] {
        assert!(methods.contains_key(method), "{method} missing");
    }
    assert!(schema["methods"]["exec"]["params"]["properties"]["timeout"].is_object());
    assert!(schema["notifications"]["exec.output"].is_object());
    let usage = Command::new(env!("CARGO_BIN_EXE_agentc"))
        .arg("serve")
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
}

/// A session's create meets the profile's isolation floor as `agentc run` does (the library's
/// floor: the engine's runtimes probed, one at the floor chosen), through both backends: the
/// sandbox runs under gVisor, labelled so, and goes with `delete`; `verify` of the profile passes.
#[test]
fn live_serve_creates_a_sandbox_at_its_isolation_floor() {
    let _turn = crate::common::turn(file!());
    if !require_daemon("live_serve_creates_a_sandbox_at_its_isolation_floor") {
        return;
    }
    if !docker(&["info", "--format", "{{json .Runtimes}}"])
        .is_ok_and(|runtimes| runtimes.contains("\"runsc\""))
    {
        assert!(
            std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() != Ok("1"),
            "AGENTC_REQUIRE_DOCKER=1 but runsc is not registered (scripts/setup-engines.sh)"
        );
        eprintln!("skipping live_serve_creates_a_sandbox_at_its_isolation_floor: no runsc");
        return;
    }
    for backend in ["cli", "api"] {
        let lab = ServeLab::new(&format!("floor-{backend}"), &test_image());
        let profile = lab.dir.path().join("floor.toml");
        std::fs::write(
            &profile,
            format!(
                "name = \"{}\"\nagent = \"custom\"\n\n[image]\nref = \"{}\"\ncommand = [\"tail\", \"-f\", \"/dev/null\"]\n\n\
                 [egress]\nmode = \"deny\"\n\n[security]\nisolation = {{ min = \"gvisor\" }}\n",
                lab.profile,
                test_image()
            ),
        )
        .unwrap();
        let mut server = Served::start(lab.dir.path(), backend);
        let created = server.call(
            "create",
            json!({ "profile": profile.display().to_string() }),
        );
        let name = created["sandbox"]["name"].as_str().unwrap().to_string();
        let placed = docker(&[
            "inspect",
            "--format",
            "{{.HostConfig.Runtime}} {{index .Config.Labels \"io.agentc.isolation\"}}",
            &name,
        ])
        .unwrap();
        assert_eq!(placed.trim(), "runsc gvisor", "{backend}");
        server.call("delete", json!({ "sandbox": name }));
        assert_eq!(lab.containers(), Vec::<String>::new(), "{backend}");
        // verify meets the floor too: its probe runs under gVisor, and every row passes.
        let verified = server.call(
            "verify",
            json!({ "profile": profile.display().to_string(), "egress_probe": "none" }),
        );
        assert_eq!(verified["passed"], true, "{backend}: {verified}");
        assert_eq!(lab.containers(), Vec::<String>::new(), "{backend}");
        assert_eq!(server.close(Duration::from_secs(20)), Some(0));
    }
}
