//! What the tests on the in-memory engine share: a custom sandbox's launch behind the egress
//! proxy or on the default bridge, the engine holding its images, a runtime to wait on.

use agentc_engine::memory::MemoryEngine;
use agentc_policy::{Instance, LaunchKind, LaunchSpec, PathProbe, ResolveInputs, Start};

pub(crate) const IMAGE: &str = "busybox:memory";
pub(crate) const PROXY_IMAGE: &str = "agentc-egress:memory";

/// An engine holding the sandbox's and the proxy's images.
pub(crate) fn engine() -> MemoryEngine {
    MemoryEngine::default()
        .with_image(IMAGE)
        .with_image(PROXY_IMAGE)
}

/// Runs `future` on a runtime of its own, as a command does.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    crate::backend::runtime()
        .expect("a runtime")
        .block_on(future)
}

/// A custom sandbox behind the egress proxy (an allowlist) or, `open`, on the default bridge.
fn profile(name: &str, open: bool) -> String {
    let egress = if open {
        "[egress]\nmode = \"unrestricted\"\n"
    } else {
        "[egress]\nhosts = [\"api.example.com\"]\n"
    };
    format!(
        "name = \"{name}\"\nagent = \"custom\"\n\n[image]\nref = \"{IMAGE}\"\n\n\
         [workspace]\nmount = false\n\n{egress}"
    )
}

/// Every path a directory: the profiles bind nothing of the host.
struct Directories;

impl PathProbe for Directories {
    fn kind(&self, _path: &str) -> agentc_policy::PathKind {
        agentc_policy::PathKind::Directory
    }
}

/// The profile `name`'s launch, started as `start`, its proxy a named image (so that no
/// agentc executable is imaged).
pub(crate) fn launch(name: &str, open: bool, start: Start) -> LaunchSpec {
    let text = profile(name, open);
    let loaded = agentc_policy::load(&format!("{name}.toml"), &text).expect("the profile loads");
    let inputs = ResolveInputs {
        instance: Instance {
            start,
            default_name: Some(format!("{name}-1")),
            ..Instance::default()
        },
        ..ResolveInputs::new(LaunchKind::Run, "/srv/task", "/srv/profiles", "/home/dev")
    };
    let mut spec = agentc_policy::resolve(&loaded, &inputs, &Directories).expect("it resolves");
    if let agentc_policy::Action::Container(container) = &mut spec.action {
        if let Some(egress) = &mut container.egress {
            egress.proxy.image = PROXY_IMAGE.to_string();
        }
    }
    spec
}

/// A profile file of a custom sandbox on the default bridge that runs a command, and the
/// directory holding it.
pub(crate) fn profile_file(extra: &str) -> (tempfile::TempDir, crate::LaunchRequest) {
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("warm.toml");
    let text = format!(
        "name = \"warm\"\nagent = \"custom\"\n\n[image]\nref = \"{IMAGE}\"\n\
         command = [\"echo\", \"hello\"]\n\n\
         [workspace]\nmount = false\n\n[egress]\nmode = \"unrestricted\"\n{extra}"
    );
    std::fs::write(&path, text).expect("the profile is written");
    let request = crate::LaunchRequest {
        workspace: Some(dir.path().to_path_buf()),
        ..crate::LaunchRequest::new(path)
    };
    (dir, request)
}

/// A launcher that makes no proxy image: the fixtures' proxies name theirs, or have none.
pub(crate) fn launcher() -> crate::launch::Launcher {
    crate::launch::Launcher {
        engine: agentc_engine::Engine::Docker,
        env: Default::default(),
        proxy: agentc_egress::image::ProxyExecutable::default(),
        terminal: false,
        reaped: Default::default(),
    }
}
