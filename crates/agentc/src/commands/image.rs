//! `agentc image context`: agentc's bundled build context of a preset's image written to a
//! directory of the user's ([`crate::bundled`] writes it).

use agentc_lifecycle::images::build_context;

use crate::bundled::write_context;
use crate::cli::{ImageCommand, ImageContextArgs};
use crate::context::{Failure, EXIT_FAILED, EXIT_INVALID};

/// Runs `agentc image`.
pub fn image(command: ImageCommand) -> Result<u8, Failure> {
    match command {
        ImageCommand::Context(crate::cli::Sub(args)) => context(args),
    }
}

/// `agentc image context AGENT DIR`: the bundled context written to DIR.
fn context(args: ImageContextArgs) -> Result<u8, Failure> {
    let agent = args.agent.name();
    let context = build_context(agent).ok_or_else(|| {
        Failure::new(
            EXIT_INVALID,
            "a custom sandbox has no bundled image: its profile names an image of your choice",
        )
        .hinted("pass claude-code, codex, opencode or hermes")
    })?;
    let dir = &args.dir;
    let occupied = std::fs::read_dir(dir)
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false);
    if occupied && !args.force {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{}: is not empty; agentc image context writes only into an empty or missing directory",
                dir.display()
            ),
        )
        .hinted("choose another directory, or pass --force to replace the context's files there"));
    }
    write_context(&context, dir)?;
    for file in &context.files {
        println!("wrote {}", dir.join(file.path).display());
    }
    println!(
        "next: docker build -t {}:latest --build-arg UID=$(id -u) --build-arg GID=$(id -g) {}",
        agent.as_str(),
        dir.display()
    );
    Ok(0)
}
