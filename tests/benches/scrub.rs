//! What searching a stream for the held keys costs (issue 36): `crate::scrub::Window::push` of
//! 64 KiB chunks, as the proxy scrubs a bound host's response body, against copying the same
//! bytes. Three bodies: bytes with no escape (a download), JSON with `\n` and `\"` (an API
//! answer), and text with a `\u00XX` escape every 100 bytes (the worst case the decoder meets).
//!
//! `cargo bench -p agentc-conformance --bench scrub`.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use agentc_egress::scrub::{Needle, Needles, Window};

const CHUNK: usize = 64 << 10;

fn bodies() -> Vec<(&'static str, Vec<u8>)> {
    let plain = vec![b'Z'; CHUNK];
    let json: Vec<u8> = b"{\"text\":\"a line\\nwith \\\"quotes\\\" and more words\"},"
        .iter()
        .copied()
        .cycle()
        .take(CHUNK)
        .collect();
    let escaped: Vec<u8> = [b"\\u0041".as_slice(), &[b'y'; 94]]
        .concat()
        .into_iter()
        .cycle()
        .take(CHUNK)
        .collect();
    vec![
        ("plain", plain),
        ("json", json),
        ("escape-every-100", escaped),
    ]
}

fn bench(criterion: &mut Criterion) {
    let needles = Arc::new(Needles::new(vec![
        Needle::new(
            "anthropic",
            "key",
            b"sk-ant-api03-REALKEY-0123456789abcdefghij",
        ),
        Needle::new("langfuse", "user", b"pk-lf-0123456789abcdef"),
    ]));
    let mut group = criterion.benchmark_group("scrub");
    group.throughput(Throughput::Bytes(CHUNK as u64));
    for (label, body) in bodies() {
        group.bench_function(format!("copy/{label}"), |bencher| {
            bencher.iter(|| std::hint::black_box(body.to_vec()))
        });
        let mut window = Window::new(needles.clone());
        group.bench_function(format!("window/{label}"), |bencher| {
            bencher.iter(|| std::hint::black_box(window.push(&body)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
