//! Latency and throughput of a terminated tunnel against a spliced one, printed for
//! BENCHMARKS.md (issue 21):
//! `cargo test -p agentc-egress --profile bench --test intercept -- --ignored --nocapture
//! --test-threads 1 bench_intercept`.
//!
//! Two measurements. [`bench_intercept`]: the client, the proxy and the servers share one
//! tokio runtime of two workers, so the proxy's work competes with the client's and the
//! server's own TLS. [`bench_intercept_isolated`]: the proxy on a runtime and a core of its own
//! (CPU 1), the client and the servers on another (CPU 0), and the proxy thread's CPU time
//! per MiB streamed (`getrusage(RUSAGE_THREAD)`).

use super::*;

use hyper::client::conn::http1::SendRequest;
use tokio::runtime::Handle;

/// How many `GET /` per path (latency), and how many `/big` streams (throughput, the median).
const REQUESTS: usize = 400;
const STREAMS: usize = 5;

/// One path measured: its label, what the client connects to and trusts, and its results.
struct Path {
    label: &'static str,
    host: &'static str,
    sender: SendRequest<Full<Bytes>>,
    times: Vec<Duration>,
    rates: Vec<f64>,
    /// The proxy thread's CPU time per MiB streamed, user and system (milliseconds).
    cpu: Vec<(f64, f64)>,
}

/// The three paths, each on its own keep-alive HTTP/1.1 connection.
async fn paths(setup: &Setup) -> Vec<Path> {
    let mut paths = Vec::new();
    for (label, host) in [
        ("direct (api.test, no proxy)", "direct"),
        ("spliced (other.test, no credential)", "other.test"),
        ("terminated (api.test, x-api-key set)", "api.test"),
    ] {
        let tls = if host == "direct" {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(setup.root.clone()).unwrap();
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
            let stream = TcpStream::connect(setup.api_address).await.unwrap();
            tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(ServerName::try_from("api.test").unwrap(), stream)
                .await
                .unwrap()
        } else {
            let trusted = if host == "api.test" {
                &setup.ca
            } else {
                &setup.root
            };
            setup
                .tls(&format!("{host}:443"), host, trusted, &[b"http/1.1"])
                .await
                .unwrap()
                .0
        };
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(connection);
        let host = if host == "direct" { "api.test" } else { host };
        paths.push(Path {
            label,
            host,
            sender,
            times: Vec::new(),
            rates: Vec::new(),
            cpu: Vec::new(),
        });
    }
    paths
}

/// The CPU time of the calling thread so far, user and system.
fn thread_cpu() -> (Duration, Duration) {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let done = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(done, 0, "getrusage(RUSAGE_THREAD)");
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (time(usage.ru_utime), time(usage.ru_stime))
}

/// The proxy thread's CPU time (its runtime is current-thread: a task spawned on it runs there).
async fn proxy_cpu(proxy: &Handle) -> (Duration, Duration) {
    proxy.spawn(async { thread_cpu() }).await.unwrap()
}

/// Measures every path: the requests one path after the other, then the streams in rounds
/// (each round one stream per path, so that a change of the machine's load reaches every path
/// alike); with the proxy's runtime, its CPU time per stream.
async fn measure(setup: &Setup, proxy: Option<&Handle>) -> String {
    let mut paths = paths(setup).await;
    for path in &mut paths {
        for _ in 0..REQUESTS {
            let started = Instant::now();
            path.sender.ready().await.unwrap();
            let response = path
                .sender
                .send_request(get("/", path.host).body(Full::new(Bytes::new())).unwrap())
                .await
                .unwrap();
            response.into_body().collect().await.unwrap();
            path.times.push(started.elapsed());
        }
        path.times.sort();
    }
    let mut bytes = 0usize;
    for _ in 0..STREAMS {
        for path in &mut paths {
            let before = match proxy {
                Some(proxy) => Some(proxy_cpu(proxy).await),
                None => None,
            };
            let started = Instant::now();
            path.sender.ready().await.unwrap();
            let response = path
                .sender
                .send_request(
                    get("/big", path.host)
                        .body(Full::new(Bytes::new()))
                        .unwrap(),
                )
                .await
                .unwrap();
            // Counted frame by frame, nothing collected.
            let mut body = response.into_body();
            bytes = 0;
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.unwrap().into_data() {
                    bytes += data.len();
                }
            }
            let mib = bytes as f64 / (1 << 20) as f64;
            path.rates.push(mib / started.elapsed().as_secs_f64());
            if let (Some(proxy), Some((user, system))) = (proxy, before) {
                let (user_after, system_after) = proxy_cpu(proxy).await;
                path.cpu.push((
                    (user_after - user).as_secs_f64() * 1000.0 / mib,
                    (system_after - system).as_secs_f64() * 1000.0 / mib,
                ));
            }
        }
    }
    let mut report = String::new();
    for path in &mut paths {
        let rates: Vec<String> = path.rates.iter().map(|r| format!("{r:.0}")).collect();
        path.rates.sort_by(f64::total_cmp);
        let rate = path.rates[STREAMS / 2];
        report.push_str(&format!(
            "{}: request p50 {:?} p90 {:?}; stream {rate:.0} MiB/s (median of {STREAMS}: {}; \
             {bytes} bytes each)",
            path.label,
            path.times[REQUESTS / 2],
            path.times[REQUESTS * 9 / 10],
            rates.join(", "),
        ));
        if !path.cpu.is_empty() {
            path.cpu.sort_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)));
            let (user, system) = path.cpu[STREAMS / 2];
            report.push_str(&format!(
                "; proxy CPU {:.2} ms/MiB (user {user:.2}, system {system:.2})",
                user + system
            ));
        }
        report.push('\n');
    }
    report
}

fn uptime() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default()
}

/// The client, the proxy and the servers on one runtime of two workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn bench_intercept() {
    let setup = setup(None).await;
    let load = uptime();
    let report = measure(&setup, None).await;
    println!(
        "shared runtime (load before: {}, after: {}):\n{report}",
        load.trim(),
        uptime().trim()
    );
}

/// Pins the calling thread to `cpu`; false where it cannot be.
fn pin_to(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is the empty set; sched_setaffinity(0, ..) is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The proxy on a current-thread runtime of its own pinned to CPU 1; the client and the
/// servers on a current-thread runtime pinned to CPU 0.
#[test]
#[ignore]
fn bench_intercept_isolated() {
    let (handle, proxy_handle) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let proxy_thread = std::thread::Builder::new()
        .name("proxy".into())
        .spawn(move || {
            let pinned = pin_to(1);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            handle.send((runtime.handle().clone(), pinned)).unwrap();
            runtime.block_on(async {
                let _ = stopped.await;
            });
        })
        .unwrap();
    let (proxy, proxy_pinned) = proxy_handle.recv().unwrap();
    let pinned = pin_to(0) && proxy_pinned;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (load, report) = runtime.block_on(async {
        let setup = setup_on(None, Some(proxy.clone())).await;
        let load = uptime();
        (load, measure(&setup, Some(&proxy)).await)
    });
    let _ = stop.send(());
    proxy_thread.join().unwrap();
    let cores = if pinned {
        "the proxy pinned to CPU 1, the client and the servers to CPU 0"
    } else {
        "NOT pinned (sched_setaffinity failed: fewer than two CPUs?)"
    };
    println!(
        "proxy on its own runtime, {cores} (load before: {}, after: {}):\n{report}",
        load.trim(),
        uptime().trim()
    );
}
