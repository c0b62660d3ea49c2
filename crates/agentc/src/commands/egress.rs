//! `agentc egress-proxy`: the allowlist proxy's own commands, run inside its container.
//!
//! `probe` is `agentc verify`'s egress check program ([`agentc_egress::probe`]), run in a
//! container of the proxy image on the isolated network of the probe it verifies; `host-path`
//! its host-path check ([`agentc_egress::host_path`]), run there with the sandbox's
//! capabilities and sysctls. `fetch-ca` is a Kubernetes sandbox pod's init container
//! ([`agentc_egress::ca_fetch`]).
//!
//! `serve` is the only agentc command that starts a multi-threaded runtime; it does so in
//! [`agentc_egress::proxy::run`], after the arguments are checked.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use agentc_egress::image::ProxyExecutable;
use agentc_egress::probe::ProbeConfig;
use agentc_egress::{Config, EgressError};

use crate::cli::{
    EgressHealthArgs, EgressHostPathArgs, EgressImageArgs, EgressProbeArgs, EgressProxyCommand,
    EgressServeArgs,
};
use crate::context::Failure;

/// Exit status of a usage error (a malformed host spec, CIDR, address or relay).
const EXIT_USAGE: u8 = 2;

/// Exit status when the proxy cannot run or is not healthy.
const EXIT_FAILED: u8 = 1;

/// Exit status of a proxy whose workload never appeared or is gone
/// ([`agentc_egress::watch`]): success, its work is done, so the restart policy agentc's
/// launches give the proxy (on failure) leaves it stopped.
const EXIT_WORKLOAD_GONE: i32 = 0;

/// Starts the watch on the proxy's workload ([`agentc_egress::watch`]) through this
/// container's resolver (`/etc/resolv.conf`, else Docker's 127.0.0.11): when it ends, the proxy
/// says why on stderr and exits [`EXIT_WORKLOAD_GONE`].
fn watch_workload(workload: &str, mode: &str) -> Result<(), Failure> {
    use agentc_egress::watch::{nameserver, watch, Watch, WatchMode};
    let mode = WatchMode::parse(mode).ok_or_else(|| {
        Failure::new(
            EXIT_USAGE,
            format!("--workload-watch takes appear or life, not {mode:?}"),
        )
    })?;
    let server = std::fs::read_to_string("/etc/resolv.conf")
        .ok()
        .and_then(|conf| nameserver(&conf))
        .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 11], 53)));
    let watched = Watch::new(workload, mode);
    std::thread::spawn(move || {
        let ended = watch(watched, server);
        eprintln!("agentc egress-proxy: {ended}; exiting");
        // What the rate limit counted and has not written yet.
        agentc_egress::audit::finish_all();
        std::process::exit(EXIT_WORKLOAD_GONE);
    });
    Ok(())
}

/// Runs one `agentc egress-proxy` subcommand.
pub fn egress_proxy(command: EgressProxyCommand) -> Result<u8, Failure> {
    match command {
        EgressProxyCommand::Serve(crate::cli::Sub(args)) => serve(&args),
        EgressProxyCommand::Health(crate::cli::Sub(args)) => health(&args),
        EgressProxyCommand::Image(crate::cli::Sub(args)) => image(&args),
        EgressProxyCommand::Kernel => {
            print!("{}", kernel_seen());
            Ok(0)
        }
        EgressProxyCommand::Probe(crate::cli::Sub(args)) => probe(&args),
        EgressProxyCommand::HostPath(crate::cli::Sub(args)) => host_path(&args),
        EgressProxyCommand::FetchCa(crate::cli::Sub(args)) => {
            agentc_egress::ca_fetch::fetch(
                &args.proxy,
                &args.dir,
                Duration::from_secs(args.wait_seconds),
            )
            .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))?;
            Ok(0)
        }
    }
}

/// Runs `agentc egress-proxy serve`: the proxy, with the watch on its workload when it has one.
fn serve(args: &EgressServeArgs) -> Result<u8, Failure> {
    let config = serve_config(args)?;
    if let Some(workload) = &args.workload {
        watch_workload(workload, &args.workload_watch)?;
    }
    agentc_egress::proxy::run(&config).map_err(|error| {
        let status = match error {
            EgressError::Replayed(_) => agentc_egress::credential::REPLAY_EXIT_CODE,
            _ => EXIT_FAILED,
        };
        Failure::new(status, error.to_string())
    })?;
    Ok(0)
}

/// The proxy's configuration from `agentc egress-proxy serve`'s arguments; a usage error when
/// one is malformed.
fn serve_config(args: &EgressServeArgs) -> Result<Config, Failure> {
    Config::from_args(
        &args.listen,
        args.dns.as_deref(),
        &args.allow,
        &args.allow_cidr,
    )
    .and_then(|config| config.with_allow_ech(&args.allow_ech))
    .and_then(|config| config.with_relays(&args.relay))
    .and_then(|config| match &args.audit_dir {
        Some(dir) => config.with_audit_dir(dir),
        None => Ok(config),
    })
    .and_then(|mut config| {
        config.limits.wildcard_names_per_minute = args.wildcard_names_per_minute;
        config.limits.check().map(|()| config)
    })
    .and_then(|config| match &args.upstream {
        Some(upstream) => config.with_upstream(upstream, args.upstream_all, &args.direct),
        None => Ok(config),
    })
    .and_then(|config| match &args.upstream_http {
        Some(http) => config.with_upstream_http(http),
        None => Ok(config),
    })
    .and_then(|config| match &args.upstream {
        Some(_) => config.with_upstream_auth(
            args.upstream_auth_env.as_deref(),
            args.upstream_http_auth_env.as_deref(),
        ),
        None => Ok(config),
    })
    // After the upstream: a key may be bound to a host only its `--upstream-all` passes.
    .and_then(|config| {
        let credentials = agentc_egress::credential::CredentialConfig::from_args(
            &args.credential,
            args.ca_dir.as_deref(),
            &args.upstream_ca,
            args.on_replay.as_deref(),
        )?;
        config.with_credentials(credentials)
    })
    .map_err(|error| Failure::new(EXIT_USAGE, error.to_string()))
}

/// Runs `agentc egress-proxy health`: checks the proxy at `--proxy`, else this container's own.
fn health(args: &EgressHealthArgs) -> Result<u8, Failure> {
    let address = match &args.proxy {
        Some(proxy) => proxy.parse().map_err(|_| {
            Failure::new(
                EXIT_USAGE,
                EgressError::ListenAddress {
                    address: proxy.clone(),
                }
                .to_string(),
            )
        })?,
        None => own_proxy(),
    };
    agentc_egress::health::check(address, Duration::from_secs(3))
        .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))?;
    Ok(0)
}

/// Runs `agentc egress-proxy image`: prints the tag of this binary's own proxy image, imported
/// unless the engine has it, or with `--print-tag` computed without contacting the daemon.
fn image(args: &EgressImageArgs) -> Result<u8, Failure> {
    let own = ProxyExecutable::running();
    let tag = if args.print_tag {
        agentc_egress::image::proxy_image(&own)
            .map_err(|error| Failure::new(EXIT_FAILED, error.to_string()))?
            .tag
    } else {
        agentc_backend_cli::exec::egress::own_proxy_image(crate::engine(), &own)
            .map_err(|error| Failure::from_hinted(125, &error))?
    };
    println!("{tag}");
    Ok(0)
}

/// The address the proxy of this container listens on, for a health check run inside it
/// (the image's `HEALTHCHECK`, the executors' `docker exec`): read from the first process's
/// command line, the proxy's `serve` (only there is its address, which is its isolated-network
/// address when agentc launched it), else [`agentc_egress::health::DEFAULT_HEALTH_TARGET`].
fn own_proxy() -> std::net::SocketAddr {
    let argv: Vec<String> = std::fs::read("/proc/1/cmdline")
        .map(|bytes| {
            bytes
                .split(|byte| *byte == 0)
                .filter(|word| !word.is_empty())
                .map(|word| String::from_utf8_lossy(word).into_owned())
                .collect()
        })
        .unwrap_or_default();
    agentc_egress::listen_of(&argv)
        .map(agentc_egress::health_target)
        .unwrap_or_else(|| {
            agentc_egress::health::DEFAULT_HEALTH_TARGET
                .parse()
                .expect("a valid default")
        })
}

/// `agentc egress-proxy host-path`: one JSON line on stdout; exit 0 when it ran, 2 on a
/// malformed target.
fn host_path(args: &EgressHostPathArgs) -> Result<u8, Failure> {
    let target = args.target.parse().map_err(|_| {
        Failure::new(
            EXIT_USAGE,
            format!("--target {:?} is not an IPV4:PORT", args.target),
        )
    })?;
    let timeout = Duration::from_millis(args.timeout_ms.clamp(100, 30_000));
    let line = agentc_egress::host_path::run(target, timeout);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", line.to_line());
    let _ = out.flush();
    Ok(0)
}

/// `agentc egress-proxy probe`: one JSON line per check on stdout; exit 0 when it ran (the
/// outcomes are in the lines), 2 on malformed arguments.
fn probe(args: &EgressProbeArgs) -> Result<u8, Failure> {
    let usage = |what: &str, value: &str| {
        Failure::new(EXIT_USAGE, format!("{what} {value:?} is not an IP:PORT"))
    };
    let timeout = Duration::from_millis(args.timeout_ms.clamp(100, 30_000));
    let (proxy, proxy_name) = probe_proxy(&args.proxy, timeout)?;
    let config = ProbeConfig {
        proxy,
        proxy_name,
        allowed: args
            .allowed
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|error: String| Failure::new(EXIT_USAGE, format!("--allowed {error}")))?,
        outside: args
            .outside
            .as_deref()
            .map(|outside| outside.parse().map_err(|_| usage("--outside", outside)))
            .transpose()?,
        timeout,
        bound: args
            .bound
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|error: String| Failure::new(EXIT_USAGE, format!("--bound {error}")))?,
        upstream_all: args.upstream_all,
        allowed_ranges: args
            .allowed_range
            .iter()
            .map(|range| {
                range.parse().map_err(|_| {
                    Failure::new(
                        EXIT_USAGE,
                        format!("--allowed-range {range:?} is not an address range"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let mut out = std::io::stdout().lock();
    for line in agentc_egress::probe::run(&config, &env) {
        let _ = writeln!(out, "{}", line.to_line());
    }
    let _ = out.flush();
    Ok(0)
}

/// The probe's `--proxy`: an `IP:PORT`, or a `HOST:PORT` (a Kubernetes Service's name, which
/// the sandbox's variables use) resolved to its first address, asked again for up to ten
/// bounds while the name is not known yet (the proxy's pod may still be starting).
fn probe_proxy(text: &str, timeout: Duration) -> Result<(SocketAddr, Option<String>), Failure> {
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok((address, None));
    }
    let usage = |why: String| {
        Failure::new(
            EXIT_USAGE,
            format!("--proxy {text:?} is not an IP:PORT or a HOST:PORT that resolves: {why}"),
        )
    };
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(usage("it has no port".to_string()));
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(usage("it has no host or no port".to_string()));
    }
    let deadline = std::time::Instant::now() + timeout * 10;
    loop {
        let resolved = text
            .to_socket_addrs()
            .map_err(|error| error.to_string())
            .and_then(|mut addresses| addresses.next().ok_or_else(|| "no address".to_string()));
        match resolved {
            Ok(address) => return Ok((address, Some(text.to_string()))),
            Err(why) if std::time::Instant::now() >= deadline => return Err(usage(why)),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// What the probe prints from inside its container (`agentc egress-proxy kernel`): the first
/// line of `/proc/version`, then the first five lines of the kernel log (`syslog(2)`, as
/// `dmesg` reads it; gVisor answers with its own boot log, a runc container without
/// `CAP_SYSLOG` with nothing).
pub fn kernel_seen() -> String {
    let mut seen = std::fs::read_to_string("/proc/version").unwrap_or_default();
    if !seen.ends_with('\n') {
        seen.push('\n');
    }
    let mut buffer = vec![0u8; 64 * 1024];
    // SAFETY: the buffer is valid for its length; SYSLOG_ACTION_READ_ALL (3) only writes
    // into it and returns how many bytes it wrote, or -1.
    let read = unsafe {
        libc::klogctl(
            3,
            buffer.as_mut_ptr().cast(),
            i32::try_from(buffer.len()).unwrap_or(i32::MAX),
        )
    };
    if let Ok(read) = usize::try_from(read) {
        let log = String::from_utf8_lossy(&buffer[..read.min(buffer.len())]).into_owned();
        for line in log.lines().take(5) {
            seen.push_str(line);
            seen.push('\n');
        }
    }
    seen
}
