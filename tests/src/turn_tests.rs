//! [`crate::turn`]: one file's tests run together, another file's wait for them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::turn::turn;

/// Waits until `what` holds; panics with `why` after 10 s (a hang guard, not a timing).
fn wait_until(what: impl Fn() -> bool, why: &str) {
    let started = Instant::now();
    while !what() {
        assert!(started.elapsed() < Duration::from_secs(10), "{why}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn one_files_tests_run_together_and_another_files_wait_for_them() {
    static RUNNING_A: AtomicUsize = AtomicUsize::new(0);
    let a = || {
        std::thread::spawn(|| {
            let _turn = turn("a");
            RUNNING_A.fetch_add(1, Ordering::SeqCst);
            wait_until(
                || RUNNING_A.load(Ordering::SeqCst) == 2,
                "a's two tests did not run together",
            );
            std::thread::sleep(Duration::from_millis(50));
            RUNNING_A.fetch_sub(1, Ordering::SeqCst);
        })
    };
    let (a1, a2) = (a(), a());
    wait_until(
        || RUNNING_A.load(Ordering::SeqCst) == 2,
        "a's two tests did not start",
    );
    let b = std::thread::spawn(|| {
        let _turn = turn("b");
        RUNNING_A.load(Ordering::SeqCst)
    });
    a1.join().expect("a's first test");
    a2.join().expect("a's second test");
    assert_eq!(b.join().expect("b's test"), 0, "b ran beside a's tests");
}
