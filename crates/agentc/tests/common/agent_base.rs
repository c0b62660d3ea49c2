//! The local base of agentc's bundled agent images (`scripts/build-agent-base.sh`) and stub
//! packages of the agents for them: what the tests that build a bundled image share
//! (`agent_images.rs`, `lifecycle.rs`' first run).

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{describe, docker, text};

/// The local base, made by `scripts/build-agent-base.sh` once per machine (cached by tag).
pub fn base_image(test: &str) -> Option<String> {
    static BASE: OnceLock<Result<String, String>> = OnceLock::new();
    let made = BASE.get_or_init(|| {
        let script = crate::common::repo_root().join("scripts/build-agent-base.sh");
        let output = Command::new("bash")
            .arg(&script)
            .output()
            .map_err(|error| format!("cannot run {}: {error}", script.display()))?;
        if !output.status.success() {
            return Err(describe(&output));
        }
        Ok(text(&output.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .to_string())
    });
    match made {
        Ok(tag) => Some(tag.clone()),
        Err(reason) if std::env::var("AGENTC_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!(
                "{test}: AGENTC_REQUIRE_DOCKER=1 but the agent base image cannot be made: {reason}"
            )
        }
        Err(reason) => {
            eprintln!("skipping {test}: no agent base image (scripts/build-agent-base.sh failed: {reason})");
            None
        }
    }
}

/// What the stubs print, the same in Node.js and Python: `STUB` with the arguments, ids and
/// effective capabilities; `WRITE DIR ok|ERROR` for /tmp, /run, the home and the root; and
/// with `--fetch=HOST`, `TLS verified` or `TLS error ...` and `HTTP STATUS BODY` of
/// `https://HOST/stub` through `HTTPS_PROXY`, sending the key variable as `x-api-key`.
const NODE_STUB: &str = r#"#!/usr/bin/env node
const fs = require('fs'), http = require('http'), tls = require('tls');
const args = process.argv.slice(2);
const status = fs.readFileSync('/proc/self/status', 'utf8');
const cap = (status.match(/^CapEff:\s*(\S+)/m) || [])[1];
console.log(`STUB args=${JSON.stringify(args)} uid=${process.getuid()} gid=${process.getgid()} capeff=${cap}`);
for (const dir of ['/tmp', '/run', process.env.HOME, '']) {
  try { fs.writeFileSync(`${dir}/stub-write`, 'x'); console.log(`WRITE ${dir || '/'} ok`); }
  catch (e) { console.log(`WRITE ${dir || '/'} ${e.code}`); }
}
const fetch = args.find((a) => a.startsWith('--fetch='));
if (fetch) {
  const host = fetch.slice('--fetch='.length);
  const proxy = new URL(process.env.HTTPS_PROXY || process.env.https_proxy);
  const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: `${host}:443` });
  req.on('connect', (res, socket) => {
    if (res.statusCode !== 200) { console.log(`TLS error CONNECT ${res.statusCode}`); socket.destroy(); return; }
    const s = tls.connect({ socket, servername: host }, () => {
      console.log('TLS verified');
      s.write(`GET /stub HTTP/1.1\r\nHost: ${host}\r\nx-api-key: ${process.env.AGENTC_IMAGES_KEY}\r\nConnection: close\r\n\r\n`);
    });
    let body = '';
    s.on('data', (d) => { body += d; });
    s.on('end', () => { const [head, rest] = body.split('\r\n\r\n'); console.log(`HTTP ${head.split(' ')[1]} ${rest}`); });
    s.on('error', (e) => console.log(`TLS error ${e.code || e.message}`));
  });
  req.on('error', (e) => console.log(`TLS error proxy ${e.code}`));
  req.end();
}
"#;

const PYTHON_STUB: &str = r#"import json, os, ssl, sys, urllib.error, urllib.request

def main():
    args = sys.argv[1:]
    cap = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff:'))
    print(f"STUB args={json.dumps(args, separators=(',', ':'))} uid={os.getuid()} gid={os.getgid()} capeff={cap}")
    for d in ['/tmp', '/run', os.environ.get('HOME', ''), '']:
        try:
            open(f"{d}/stub-write", 'w').write('x')
            print(f"WRITE {d or '/'} ok")
        except OSError as e:
            import errno
            print(f"WRITE {d or '/'} {errno.errorcode.get(e.errno, e.errno)}")
    for a in args:
        if a.startswith('--fetch='):
            host = a[len('--fetch='):]
            request = urllib.request.Request(f"https://{host}/stub", headers={'x-api-key': os.environ.get('AGENTC_IMAGES_KEY', '')})
            try:
                with urllib.request.urlopen(request, timeout=30) as r:
                    print('TLS verified')
                    print(f"HTTP {r.status} {r.read().decode()}")
            except urllib.error.URLError as e:
                print(f"TLS error {e.reason}")
    sys.stdout.flush()
"#;

/// One agent's stub package, written into `dir`: an npm tarball or a wheel of the real
/// package's name, installing the real executable. Returns its file name.
pub fn stub_package(agent: &str, dir: &Path, base: &str) -> String {
    let image = agentc_lifecycle::images::AGENT_IMAGES
        .iter()
        .find(|image| image.agent.as_str() == agent)
        .expect("a bundled image");
    let work = tempfile::tempdir().unwrap();
    match image.kind {
        agentc_lifecycle::images::PackageKind::Npm => {
            let package = work.path().join("package");
            std::fs::create_dir_all(&package).unwrap();
            std::fs::write(
                package.join("package.json"),
                format!(
                    "{{\"name\":\"{}\",\"version\":\"0.0.1-agentc-stub\",\"bin\":{{\"{}\":\"cli.js\"}}}}\n",
                    image.package, image.executable
                ),
            )
            .unwrap();
            std::fs::write(package.join("cli.js"), NODE_STUB).unwrap();
            // The same bytes every time, so a rerun's build finds its layers cached.
            let file = format!("{agent}-stub.tgz");
            let status = Command::new("sh")
                .arg("-c")
                .arg(
                    "tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
                     -C \"$1\" -cf - package | gzip -n >\"$2\"",
                )
                .arg("sh")
                .arg(work.path())
                .arg(dir.join(&file))
                .status()
                .unwrap();
            assert!(status.success());
            file
        }
        agentc_lifecycle::images::PackageKind::Pip => {
            // A wheel is a zip: made by the base's Python, so the host needs none.
            let module = image.package.replace('-', "_");
            let dist = format!("{module}-0.0.1.dist-info");
            let file = format!("{module}-0.0.1-py3-none-any.whl");
            let files = [
                (format!("{module}_stub/__init__.py"), PYTHON_STUB.to_string()),
                (
                    format!("{dist}/METADATA"),
                    format!("Metadata-Version: 2.1\nName: {}\nVersion: 0.0.1\n", image.package),
                ),
                (
                    format!("{dist}/WHEEL"),
                    "Wheel-Version: 1.0\nGenerator: agentc-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                        .to_string(),
                ),
                (
                    format!("{dist}/entry_points.txt"),
                    format!("[console_scripts]\n{} = {module}_stub:main\n", image.executable),
                ),
            ];
            let mut record = String::new();
            for (path, contents) in &files {
                let target = work.path().join(path);
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::write(&target, contents).unwrap();
                record.push_str(&format!("{path},,\n"));
            }
            record.push_str(&format!("{dist}/RECORD,,\n"));
            std::fs::write(work.path().join(&dist).join("RECORD"), record).unwrap();
            let script = format!(
                "import os, zipfile\nz = zipfile.ZipFile('/out/{file}', 'w')\n\
                 for root, _, names in sorted(os.walk('/src')):\n    for n in sorted(names):\n        \
                 p = os.path.join(root, n)\n        \
                 i = zipfile.ZipInfo(os.path.relpath(p, '/src'), (1980, 1, 1, 0, 0, 0))\n        \
                 z.writestr(i, open(p, 'rb').read())\nz.close()\n"
            );
            docker(&[
                "run",
                "--rm",
                "--network=none",
                "-v",
                &format!("{}:/src:ro", work.path().display()),
                "-v",
                &format!("{}:/out", dir.display()),
                base,
                "python3",
                "-c",
                &script,
            ])
            .expect("make the wheel");
            file
        }
    }
}
