//! `agentc serve`: the protocol's schema, or the JSON-RPC server on stdin and stdout
//! ([`agentc_serve`]) through the backend asked for, the egress proxy an image of this binary.

use agentc_egress::image::ProxyExecutable;

use crate::cli::ServeArgs;
use crate::context::Failure;

/// Runs `agentc serve`: `--schema` prints the protocol's schema; `--stdio` serves until stdin
/// closes, a signal or `shutdown`, and exits 0.
pub fn serve(args: ServeArgs) -> Result<u8, Failure> {
    if args.schema {
        println!("{}", agentc_serve::schema_text()?);
        return Ok(0);
    }
    if !args.stdio {
        return Err(
            Failure::usage("agentc serve needs --stdio (or --schema)").hinted(
                "`agentc serve --stdio` speaks JSON-RPC 2.0 on stdin and stdout; see docs/serve.md",
            ),
        );
    }
    let driver = agentc_host::backend::Driver {
        // The leftovers of killed launches reaped first are said on stderr.
        reaped: crate::commands::launch::reaped(),
        ..agentc_host::backend::Driver::new(
            crate::engine(),
            args.backend.into(),
            ProxyExecutable::running(),
        )
    };
    agentc_serve::serve_stdio(&driver)
}
