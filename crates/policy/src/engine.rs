//! Which container engine a launch drives: one value for every crate (the engine port, the
//! doctor's checks, the command line's `--engine`), never process state.

use serde::{Deserialize, Serialize};

/// A container engine agentc can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// The Docker Engine (`docker`, `/var/run/docker.sock`).
    #[default]
    Docker,
    /// Podman (`podman`, and its Docker-compatible API socket from `podman system service`).
    Podman,
}

impl Engine {
    /// Every engine, in the order `--engine` lists them.
    pub const ALL: [Engine; 2] = [Engine::Docker, Engine::Podman];

    /// `docker` or `podman`: its name, and the program the CLI backend runs.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }

    /// The program the CLI backend runs.
    pub fn program(self) -> &'static str {
        self.as_str()
    }

    /// Reads `docker` or `podman` (any case, surrounding blanks ignored).
    pub fn parse(text: &str) -> Option<Engine> {
        Engine::ALL
            .into_iter()
            .find(|engine| text.trim().eq_ignore_ascii_case(engine.as_str()))
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_read_back_from_their_names_in_any_case() {
        for engine in Engine::ALL {
            assert_eq!(Engine::parse(engine.as_str()), Some(engine));
            assert_eq!(
                Engine::parse(&format!(" {} ", engine.as_str().to_uppercase())),
                Some(engine)
            );
        }
        assert_eq!(Engine::parse("containerd"), None);
        assert_eq!(
            serde_json::to_string(&Engine::Podman).unwrap(),
            "\"podman\""
        );
    }
}
