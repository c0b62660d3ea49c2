//! `agentc egress-proxy`: the allowlist proxy's own commands, run inside its container.
//!
//! `serve` is the only agentc command that starts a multi-threaded runtime; it does so in
//! [`agentc_egress::proxy::run`], after the arguments are checked.

use std::time::Duration;

use agentc_egress::{Config, EgressError};

use crate::cli::EgressProxyCommand;
use crate::context::Failure;

/// Exit status of a usage error (a malformed host spec, CIDR, address or relay).
const EXIT_USAGE: u8 = 2;

/// Exit status when the proxy cannot run or is not healthy.
const EXIT_FAILED: u8 = 1;

/// Runs one `agentc egress-proxy` subcommand.
pub fn egress_proxy(command: EgressProxyCommand) -> Result<u8, Failure> {
    match command {
        EgressProxyCommand::Serve(args) => {
            let config = Config::from_args(
                &args.listen,
                args.dns.as_deref(),
                &args.allow,
                &args.allow_cidr,
            )
            .and_then(|config| config.with_relays(&args.relay))
            .map_err(|error| Failure::new(EXIT_USAGE, error.to_string()))?;
            agentc_egress::proxy::run(&config)
                .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))?;
            Ok(0)
        }
        EgressProxyCommand::Health(args) => {
            let address = args.proxy.parse().map_err(|_| {
                Failure::new(
                    EXIT_USAGE,
                    EgressError::ListenAddress {
                        address: args.proxy.clone(),
                    }
                    .to_string(),
                )
            })?;
            agentc_egress::health::check(address, Duration::from_secs(3))
                .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))?;
            Ok(0)
        }
        EgressProxyCommand::Image(args) => {
            let image = agentc_egress::image::proxy_image()
                .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))?;
            let tag = if args.print_tag {
                image.tag
            } else {
                agentc_egress::image::ensure_image(&image)
                    .map_err(|error| Failure::new(125, error.to_string()))?
            };
            println!("{tag}");
            Ok(0)
        }
    }
}
