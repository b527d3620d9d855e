//! The controller seam's fast-tier targets (sdTMM's multi-tenant partitioning, issue 15): the
//! view tells a controller the fast tier's page budget on a tiered engine only; a decision's
//! per-pool fast-tier page targets reach `Engine::set_fast_targets` in bytes, scaled down when
//! they sum above the budget; a decision without them leaves the targets in force.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use locus_engine::control::{Access, ControlConfig, ControlView, Controller, Decision, Interval};
use locus_engine::{Engine, EngineConfig, Policy, SetOptions, TenantId, TierConfig};

/// The fast budgets the controller's views showed, in order.
type Seen = Arc<Mutex<Vec<Option<u64>>>>;

/// Sets `plan[i]` at decision i (none once the plan runs out), and records each view's
/// `fast_pages`.
#[derive(Debug)]
struct Scripted {
    plan: Vec<Option<Vec<u64>>>,
    seen: Seen,
}

impl Controller for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn on_access(&mut self, _a: &Access) {}

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        self.seen.lock().unwrap().push(view.fast_pages);
        let i = view.interval as usize;
        Decision {
            fast_pages: self.plan.get(i).cloned().flatten(),
            ..Decision::default()
        }
    }
}

/// 100 pages of 4 KiB, a fifth of them fast (20 pages), two tenants, the scripted controller.
fn setup(tier: bool, plan: Vec<Option<Vec<u64>>>) -> (Engine, [TenantId; 2], Seen) {
    let cfg = EngineConfig {
        tier: tier.then(|| TierConfig {
            fast_share: 0.2,
            worker_interval: 0,
            ..TierConfig::default()
        }),
        ..small_logical(100, 3)
    };
    let (mut e, _) = engine_with(cfg);
    let a = tenant(&mut e, "a", Policy::AllkeysLru);
    let b = tenant(&mut e, "b", Policy::AllkeysLru);
    let seen = Arc::new(Mutex::new(Vec::new()));
    e.set_controller(
        Box::new(Scripted {
            plan,
            seen: seen.clone(),
        }),
        ControlConfig {
            interval: Interval::Requests(1_000_000),
            ..ControlConfig::default()
        },
    );
    (e, [a, b], seen)
}

fn fast_targets(e: &Engine, ts: [TenantId; 2]) -> [Option<u64>; 2] {
    ts.map(|t| e.tenant_tier_stats(t).unwrap().fast_target_bytes)
}

#[test]
fn a_decisions_fast_pages_become_byte_targets_and_stay_until_replaced() {
    let (mut e, ts, seen) = setup(true, vec![Some(vec![12, 8]), None, Some(vec![30, 10])]);
    assert_eq!(fast_targets(&e, ts), [None, None], "none before a decision");
    e.run_controller();
    assert_eq!(fast_targets(&e, ts), [Some(12 * 4096), Some(8 * 4096)]);
    // A decision without fast targets keeps those in force.
    e.run_controller();
    assert_eq!(fast_targets(&e, ts), [Some(12 * 4096), Some(8 * 4096)]);
    // 40 pages asked of a 20-page fast tier: scaled down to fit, and noted.
    e.run_controller();
    assert_eq!(fast_targets(&e, ts), [Some(15 * 4096), Some(5 * 4096)]);
    let r = e.last_control_record().unwrap();
    assert!(
        r.notes
            .iter()
            .any(|(n, v)| n == "fast_targets_clamped_from_pages" && *v == 40.0),
        "{:?}",
        r.notes
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![Some(20); 3],
        "the view's fast budget"
    );
}

#[test]
fn the_demotion_worker_enforces_a_controllers_fast_target() {
    // a's target is 2 pages, b's 18: after a fills the fast tier and b writes, the workers
    // bring a within its target.
    let (mut e, ts, _) = setup(true, vec![Some(vec![2, 18])]);
    e.run_controller();
    let v = vec![7u8; 200];
    for i in 0..300u64 {
        e.set(ts[0], format!("a{i}").as_bytes(), &v, SetOptions::default())
            .unwrap();
    }
    for i in 0..300u64 {
        e.set(ts[1], format!("b{i}").as_bytes(), &v, SetOptions::default())
            .unwrap();
        e.run_tier_workers();
    }
    for _ in 0..50 {
        e.run_tier_workers();
    }
    let a = e.tenant_tier_stats(ts[0]).unwrap();
    assert!(
        a.tiers[0].charged_bytes <= 2 * 4096,
        "a holds {} fast bytes over its 2-page target",
        a.tiers[0].charged_bytes
    );
    assert!(
        a.tiers[1].items > 0,
        "a's other items went to the slow tier"
    );
}

#[test]
fn an_untiered_engine_shows_no_fast_budget_and_ignores_fast_targets() {
    let (mut e, ts, seen) = setup(false, vec![Some(vec![12, 8])]);
    e.run_controller();
    assert_eq!(*seen.lock().unwrap(), vec![None]);
    assert!(e.tenant_tier_stats(ts[0]).is_none());
    assert!(
        e.last_control_record()
            .unwrap()
            .notes
            .iter()
            .all(|(n, _)| !n.contains("fast"))
    );
}
