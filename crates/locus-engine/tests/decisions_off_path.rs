//! Where a due decision runs: inside the next data-path call (the simulator's default, so that
//! decisions fall at exact request counts), or only in `Engine::tick` once
//! `set_decisions_on_data_path(false)` is set (the server: no client's request runs a controller).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use locus_common::VirtualClock;
use locus_engine::control::{Access, ControlConfig, ControlView, Controller, Decision, Interval};
use locus_engine::{Engine, EngineConfig, SetOptions, TenantConfig, TenantId};

/// Counts its decisions in a counter the test keeps.
#[derive(Debug)]
struct Counting(Arc<AtomicU64>);

impl Controller for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn on_access(&mut self, _a: &Access) {}
    fn decide(&mut self, _view: &ControlView<'_>) -> Decision {
        self.0.fetch_add(1, Ordering::SeqCst);
        Decision::default()
    }
}

fn engine(
    interval: Interval,
    on_path: bool,
) -> (Engine, TenantId, Arc<AtomicU64>, Arc<VirtualClock>) {
    let clock = Arc::new(VirtualClock::new(1_000));
    let cfg = EngineConfig {
        maxmemory: 16 << 20,
        page_size: 64 << 10,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(cfg, clock.clone()).unwrap();
    let t = e.add_tenant(TenantConfig::new("t")).unwrap();
    let n = Arc::new(AtomicU64::new(0));
    e.set_decisions_on_data_path(on_path);
    e.set_controller(
        Box::new(Counting(n.clone())),
        ControlConfig {
            interval,
            max_moves: 4,
            offload: false,
        },
    );
    (e, t, n, clock)
}

fn requests(e: &mut Engine, t: TenantId, n: u64) {
    for i in 0..n {
        e.set(t, format!("k{i}").as_bytes(), b"v", SetOptions::default())
            .unwrap();
        let _ = e.get_value(t, format!("k{}", i / 2).as_bytes());
    }
}

#[test]
fn on_the_data_path_a_decision_runs_at_the_next_request_after_the_interval() {
    let (mut e, t, n, _) = engine(Interval::Requests(100), true);
    requests(&mut e, t, 500);
    // 1,000 accesses, due every 100: decided inside requests, no tick needed.
    assert!(
        n.load(Ordering::SeqCst) >= 9,
        "{}",
        n.load(Ordering::SeqCst)
    );
}

#[test]
fn off_the_data_path_no_request_decides_and_the_tick_does() {
    let (mut e, t, n, _) = engine(Interval::Requests(100), false);
    requests(&mut e, t, 500);
    assert_eq!(n.load(Ordering::SeqCst), 0, "a request ran the controller");
    assert!(e.decision_due());
    e.tick();
    assert_eq!(n.load(Ordering::SeqCst), 1);
    assert_eq!(e.control_decisions(), 1);
    assert!(!e.decision_due());
}

#[test]
fn off_the_data_path_a_time_interval_is_decided_by_the_tick_only() {
    let (mut e, t, n, clock) = engine(Interval::Millis(10), false);
    clock.advance_ms(50);
    requests(&mut e, t, 100);
    assert_eq!(n.load(Ordering::SeqCst), 0, "a request ran the controller");
    e.tick();
    assert_eq!(n.load(Ordering::SeqCst), 1);
    // Not due again until another interval has passed.
    e.tick();
    assert_eq!(n.load(Ordering::SeqCst), 1);
    clock.advance_ms(20);
    e.tick();
    assert_eq!(n.load(Ordering::SeqCst), 2);
}
