//! Memory tiers (sdTMM): placement, migration and the workers' guarantees, and an op-sequence
//! property test against a naive map with the workers run at random points (issue 15,
//! acceptance 1).

mod common;

use std::collections::{HashMap, HashSet};

use common::*;
use locus_engine::{
    Engine, EngineConfig, EngineError, KeyEventKind, Policy, PromotionMode, SetOptions,
    SlowBackend, Tier, TierConfig, TierWork,
};
use proptest::prelude::*;

/// `pages` pages of 4 KiB, a fifth of them fast; workers only when the test runs them.
fn tiered(pages: u64, promotion: PromotionMode) -> EngineConfig {
    EngineConfig {
        tier: Some(TierConfig {
            promotion,
            worker_interval: 0,
            demotion_batch: 8,
            eviction_batch: 8,
            promotion_batch: 8,
            ..TierConfig::default()
        }),
        ..small_logical(pages, 7)
    }
}

fn counts(e: &Engine, t: locus_engine::TenantId) -> [u64; 2] {
    let s = e.tenant_tier_stats(t).unwrap();
    [s.tiers[0].items, s.tiers[1].items]
}

#[test]
fn an_engine_without_tiers_reports_none() {
    let (mut e, _) = engine_with(small(4));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    e.set(t, b"k", b"v", SetOptions::default()).unwrap();
    assert_eq!(e.item_tier(t, b"k"), None);
    assert!(e.tier_stats().is_none() && e.tenant_tier_stats(t).is_none());
    assert_eq!(e.run_tier_workers(), TierWork::default());
}

#[test]
fn bad_tier_settings_are_refused_naming_the_key() {
    let bad = |tc: TierConfig| {
        let cfg = EngineConfig {
            tier: Some(tc),
            ..small(10)
        };
        match Engine::new(cfg, std::sync::Arc::new(locus_common::VirtualClock::new(0))) {
            Err(EngineError::InvalidConfig { problems }) => problems.join("; "),
            other => panic!("accepted: {other:?}"),
        }
    };
    assert!(
        bad(TierConfig {
            fast_share: 1.2,
            ..TierConfig::default()
        })
        .contains("tier.fast_share")
    );
    assert!(
        bad(TierConfig {
            low_watermark: 0.3,
            high_watermark: 0.1,
            ..TierConfig::default()
        })
        .contains("out of order")
    );
    assert!(
        bad(TierConfig {
            slow_backend: SlowBackend::Numa { node: 999 },
            ..TierConfig::default()
        })
        .contains("NUMA node 999 does not exist")
    );
    assert!(
        bad(TierConfig {
            slow_backend: SlowBackend::File {
                path: "/proc/nonexistent/dir/slow".into()
            },
            ..TierConfig::default()
        })
        .contains("cannot be opened for writing")
    );
    // The failed validation left no file behind.
    assert!(!std::path::Path::new("/proc/nonexistent/dir/slow").exists());
}

#[test]
fn new_items_enter_the_fast_tier_and_cold_ones_are_demoted() {
    let (mut e, _) = engine_with(tiered(50, PromotionMode::Reuse));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    for i in 0..400 {
        e.set(t, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
        assert_eq!(e.item_tier(t, &key(i)), Some(Tier::Fast), "admission");
        e.run_tier_workers();
        e.check_invariants();
    }
    let [fast, slow] = counts(&e, t);
    assert_eq!(
        fast + slow,
        400,
        "nothing evicted while the slow tier has room"
    );
    assert!(slow > 0 && fast > 0, "{fast} fast, {slow} slow");
    let st = e.tenant_tier_stats(t).unwrap();
    assert_eq!(st.demotions, slow);
    // Without re-accesses the insertion point keeps the first items near the head (they
    // were pushed up as later items entered below them) and demotes the later ones from the
    // tail: a quarter of the list is the filter for one-hit wonders.
    assert_eq!(e.item_tier(t, &key(0)), Some(Tier::Fast));
    assert_eq!(e.item_tier(t, &key(399)), Some(Tier::Fast), "just written");
    // A slow hit is reported as such and the value is intact.
    let s = (0..100)
        .find(|&i| e.item_tier(t, &key(i)) == Some(Tier::Slow))
        .unwrap();
    assert_eq!(e.get(t, &key(s)).unwrap(), &val(s, 200)[..]);
    assert_eq!(e.last_hit_tier(), Some(Tier::Slow));
    assert_eq!(e.get(t, &key(399)).unwrap(), &val(399, 200)[..]);
    assert_eq!(e.last_hit_tier(), Some(Tier::Fast));
    assert!(e.get(t, b"absent").is_none());
    assert_eq!(e.last_hit_tier(), None);
}

#[test]
fn reused_slow_items_are_promoted_and_one_off_ones_are_not() {
    let (mut e, _) = engine_with(tiered(50, PromotionMode::Reuse));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    for i in 0..400 {
        e.set(t, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
        e.run_tier_workers();
    }
    // Fast-tier re-accesses with a short reuse time set the threshold.
    for _ in 0..20 {
        for i in 390..400 {
            e.get(t, &key(i));
        }
    }
    // One slow key is re-read with a short reuse time; another is read once.
    let mut slow = (0..100).filter(|&i| e.item_tier(t, &key(i)) == Some(Tier::Slow));
    let (hot, once) = (slow.next().unwrap(), slow.next().unwrap());
    e.get(t, &key(hot));
    e.get(t, &key(hot));
    e.get(t, &key(once));
    let mean = e.tier_stats().unwrap().mean_reuse.unwrap();
    assert!(mean < 20.0, "mean reuse {mean}");
    let w = e.run_tier_workers();
    assert!(w.promoted >= 1);
    assert_eq!(
        e.item_tier(t, &key(hot)),
        Some(Tier::Fast),
        "hot item promoted"
    );
    assert_eq!(
        e.item_tier(t, &key(once)),
        Some(Tier::Slow),
        "read once long after its write: stays"
    );
    e.check_invariants();
}

#[test]
fn naive_promotion_moves_any_recently_touched_slow_item() {
    let (mut e, _) = engine_with(tiered(50, PromotionMode::Naive));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    for i in 0..400 {
        e.set(t, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
        e.run_tier_workers();
    }
    let s = (0..100)
        .find(|&i| e.item_tier(t, &key(i)) == Some(Tier::Slow))
        .unwrap();
    e.get(t, &key(s));
    e.run_tier_workers();
    assert_eq!(e.item_tier(t, &key(s)), Some(Tier::Fast));
    e.check_invariants();
}

#[test]
fn a_full_fast_tier_demotes_on_write_then_evicts_without_cascading() {
    let (mut e, _) = engine_with(tiered(50, PromotionMode::Off));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    // No worker runs: once the fast tier is at its budget, writes demote its coldest items
    // while the slow tier has room, and only then evict out of the cache.
    let mut first_eviction = None;
    for i in 0..2000 {
        let before = e.tier_stats().unwrap();
        e.set(t, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
        let st = e.tenant_tier_stats(t).unwrap();
        if st.tiers[0].evictions.total() > 0 && first_eviction.is_none() {
            first_eviction = Some(i);
            assert_eq!(
                before.used_pages[1], before.budget_pages[1],
                "the fast tier evicted while the slow tier had a free page"
            );
        }
        assert_eq!(
            st.tiers[1].evictions.total(),
            0,
            "a write evicted from the slow tier"
        );
        assert_eq!(e.item_tier(t, &key(i)), Some(Tier::Fast), "admission");
    }
    let st = e.tenant_tier_stats(t).unwrap();
    assert!(st.demotions > 0 && st.tiers[1].items == st.demotions);
    assert!(
        first_eviction.is_some(),
        "2000 items of 200 bytes overflow 50 pages of 4 KiB: the fast tier must evict in the end"
    );
    assert!(st.tiers[0].evictions.reactive > 0);
    let ts = e.tier_stats().unwrap();
    assert!(ts.used_pages[0] <= ts.budget_pages[0]);
    assert_eq!(ts.used_pages[1], ts.budget_pages[1]);
    // Every demoted item kept its value.
    for i in 0..2000 {
        if e.item_tier(t, &key(i)) == Some(Tier::Slow) {
            assert_eq!(e.peek(t, &key(i)).unwrap(), &val(i, 200)[..]);
        }
    }
    e.check_invariants();
}

#[test]
fn a_write_demotes_another_tenants_page_rather_than_evicting() {
    // Two tenants share a small fast tier; b fills it first, then a writes: a's writes take
    // b's fast pages by demoting their items (b keeps them, in the slow tier) instead of
    // evicting b's items or a's own.
    let (mut e, _) = engine_with(tiered(100, PromotionMode::Off));
    let a = tenant(&mut e, "a", Policy::AllkeysLru);
    let b = tenant(&mut e, "b", Policy::AllkeysLru);
    for i in 0..300 {
        e.set(b, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
    }
    for i in 0..300 {
        e.set(a, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
        e.check_invariants();
    }
    for t in [a, b] {
        let st = e.tenant_tier_stats(t).unwrap();
        assert_eq!(
            st.tiers[0].evictions.total() + st.tiers[1].evictions.total(),
            0
        );
        assert_eq!(st.tiers[0].items + st.tiers[1].items, 300);
    }
    assert!(e.tenant_tier_stats(a).unwrap().tiers[0].pages > 0);
    for i in 0..300 {
        assert_eq!(e.peek(b, &key(i)).unwrap(), &val(i, 200)[..]);
    }
}

#[test]
fn tenants_over_their_fast_target_are_shrunk_first() {
    let (mut e, _) = engine_with(tiered(100, PromotionMode::Off));
    let a = tenant(&mut e, "a", Policy::AllkeysLru);
    let b = tenant(&mut e, "b", Policy::AllkeysLru);
    for i in 0..200 {
        e.set(a, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
    }
    let fast_bytes = e.tenant_tier_stats(a).unwrap().tiers[0].charged_bytes;
    assert!(fast_bytes > 16 << 10);
    e.set_fast_targets(&[Some(8 << 10), Some(64 << 10)])
        .unwrap();
    for _ in 0..50 {
        e.run_tier_workers();
    }
    assert!(e.tenant_tier_stats(a).unwrap().tiers[0].charged_bytes <= 8 << 10);
    for i in 0..400 {
        e.set(b, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
    }
    // b's fills evict b's own items once b is at its target and a is under its own.
    assert_eq!(
        e.tenant_tier_stats(a).unwrap().tiers[0].evictions.total(),
        0
    );
    assert!(e.set_fast_targets(&[None]).is_err());
    e.check_invariants();
}

#[derive(Debug, Clone)]
enum Op {
    Set { t: usize, k: u16, len: u16 },
    Get { t: usize, k: u16 },
    Del { t: usize, k: u16 },
    Workers(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        // Two value sizes (two size classes): each (tenant, class) needs pages of its own in
        // each tier, and the fast tier has nine.
        5 => (0..2usize, 0..400u16, prop::sample::select(vec![120u16, 300]))
            .prop_map(|(t, k, len)| Op::Set { t, k, len }),
        5 => (0..2usize, 0..400u16).prop_map(|(t, k)| Op::Get { t, k }),
        1 => (0..2usize, 0..400u16).prop_map(|(t, k)| Op::Del { t, k }),
        2 => (1..4u8).prop_map(Op::Workers),
    ]
}

/// Slow-tier evictions and demotions so far, over all tenants.
fn moves(e: &Engine, ids: &[locus_engine::TenantId]) -> (u64, u64) {
    ids.iter().fold((0, 0), |(ev, dm), &t| {
        let s = e.tenant_tier_stats(t).unwrap();
        (ev + s.tiers[1].evictions.total(), dm + s.demotions)
    })
}

/// Fast-tier evictions so far (every cause), over all tenants.
fn fast_evictions(e: &Engine, ids: &[locus_engine::TenantId]) -> u64 {
    ids.iter()
        .map(|&t| e.tenant_tier_stats(t).unwrap().tiers[0].evictions.total())
        .sum()
}

fn run_ops(ops: &[Op], promotion: PromotionMode, targets: bool) {
    // Tiers of a few 4 KiB pages: at sdTMM's 2%/5% a tier's watermark would be smaller than
    // one chunk, so these runs use 15%/30% to make the workers start and stop often.
    let mut cfg = tiered(24, promotion);
    if let Some(tc) = cfg.tier.as_mut() {
        tc.fast_share = 0.375;
        tc.low_watermark = 0.15;
        tc.high_watermark = 0.3;
    }
    let (mut e, _) = engine_with(cfg);
    let ids = [
        tenant(&mut e, "a", Policy::AllkeysLru),
        tenant(&mut e, "b", Policy::AllkeysLru),
    ];
    if targets {
        e.set_fast_targets(&[Some(6 << 10), Some(10 << 10)])
            .unwrap();
    }
    e.record_key_events(true);
    let tc = e.config().tier.clone().unwrap();
    let mut model: HashMap<(usize, u16), Vec<u8>> = HashMap::new();
    for (n, o) in ops.iter().enumerate() {
        match *o {
            Op::Set { t, k, len } => {
                let before = moves(&e, &ids);
                let fast_before = fast_evictions(&e, &ids);
                let slow_room = {
                    let ts = e.tier_stats().unwrap();
                    ts.used_pages[1] < ts.budget_pages[1]
                };
                let existed = e.item_tier(ids[t], &key(u64::from(k))).is_some();
                let v = val(n as u64, len as usize);
                e.set(ids[t], &key(u64::from(k)), &v, SetOptions::default())
                    .unwrap();
                model.insert((t, k), v);
                // A new key is admitted to the fast tier; an overwrite that fits its chunk is
                // rewritten in place, in whichever tier holds it.
                if !existed {
                    assert_eq!(
                        e.item_tier(ids[t], &key(u64::from(k))),
                        Some(Tier::Fast),
                        "a new item is admitted to the fast tier"
                    );
                }
                assert_eq!(
                    moves(&e, &ids).0,
                    before.0,
                    "a write evicted from the slow tier (cascade)"
                );
                // A write may demote to make room, and evicts out of the fast tier only when
                // demotion could not: never while the slow tier has a free page.
                if slow_room {
                    assert_eq!(
                        fast_evictions(&e, &ids),
                        fast_before,
                        "a write evicted from the fast tier while the slow tier had room"
                    );
                }
            }
            Op::Get { t, k } => {
                let got = e.get(ids[t], &key(u64::from(k))).map(<[u8]>::to_vec);
                if let Some(g) = got {
                    assert_eq!(Some(&g), model.get(&(t, k)), "a GET returned another value");
                }
            }
            Op::Del { t, k } => {
                e.delete(ids[t], &key(u64::from(k)));
                model.remove(&(t, k));
            }
            Op::Workers(steps) => {
                for _ in 0..steps {
                    e.take_key_events();
                    let present: Vec<((usize, u16), Option<Tier>)> = model
                        .keys()
                        .map(|&(t, k)| ((t, k), e.item_tier(ids[t], &key(u64::from(k)))))
                        .filter(|(_, tier)| tier.is_some())
                        .collect();
                    let w = e.run_tier_workers();
                    let evicted: HashSet<(usize, Vec<u8>)> = e
                        .take_key_events()
                        .into_iter()
                        .map(|ev| {
                            assert_eq!(ev.kind, KeyEventKind::Evicted);
                            (ev.tenant.0 as usize, ev.key)
                        })
                        .collect();
                    for ((t, k), _) in &present {
                        let kb = key(u64::from(*k));
                        if evicted.contains(&(*t, kb.clone())) {
                            assert!(e.item_tier(ids[*t], &kb).is_none(), "evicted yet present");
                            continue;
                        }
                        assert!(
                            e.item_tier(ids[*t], &kb).is_some(),
                            "an item was lost by a migration"
                        );
                        assert_eq!(
                            e.peek(ids[*t], &kb).map(<[u8]>::to_vec).as_ref(),
                            model.get(&(*t, *k)),
                            "a migration changed a value"
                        );
                    }
                    let ts = e.tier_stats().unwrap();
                    for tier in 0..2 {
                        assert!(ts.used_pages[tier] <= ts.budget_pages[tier], "tier budget");
                    }
                    assert!(
                        ts.free_share[0] >= tc.low_watermark
                            || w.demoted == u64::from(tc.demotion_batch),
                        "fast tier left below its low watermark: {ts:?} {w:?}"
                    );
                    if !targets && w.demoted > 0 && w.demoted < u64::from(tc.demotion_batch) {
                        assert!(
                            ts.free_share[0] >= tc.high_watermark,
                            "the demotion worker stopped below the high watermark: {ts:?} {w:?}"
                        );
                    }
                    if w.evicted > 0 && w.evicted < u64::from(tc.eviction_batch) {
                        assert!(
                            ts.free_share[1] >= tc.high_watermark,
                            "the eviction worker stopped below the high watermark: {ts:?} {w:?}"
                        );
                    }
                    assert!(
                        ts.free_share[1] >= tc.low_watermark
                            || w.evicted == u64::from(tc.eviction_batch),
                        "slow tier left below its low watermark: {ts:?} {w:?}"
                    );
                    e.check_invariants();
                }
            }
        }
        e.check_invariants();
    }
    if std::env::var_os("TIERS_DEBUG").is_some() {
        eprintln!("moves {:?} stats {:?}", moves(&e, &ids), e.tier_stats());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn op_sequences_keep_the_tier_invariants(ops in prop::collection::vec(op(), 1..1000)) {
        run_ops(&ops, PromotionMode::Reuse, false);
    }

    #[test]
    fn op_sequences_keep_the_tier_invariants_naive(ops in prop::collection::vec(op(), 1..1000)) {
        run_ops(&ops, PromotionMode::Naive, false);
    }

    #[test]
    fn op_sequences_keep_the_tier_invariants_with_targets(
        ops in prop::collection::vec(op(), 1..1000)
    ) {
        run_ops(&ops, PromotionMode::Reuse, true);
    }
}

/// `tiered(pages)` with this slow backend and workers run by the test.
fn tiered_on(pages: u64, backend: SlowBackend) -> EngineConfig {
    let mut cfg = tiered(pages, PromotionMode::Reuse);
    cfg.tier.as_mut().unwrap().slow_backend = backend;
    cfg
}

/// Writes 400 keys with the workers running, re-reads a slice of them (promotions), and checks
/// every value against what was written, through demotions, promotions and slow-tier hits.
fn round_trip(e: &mut Engine) -> locus_engine::TenantId {
    let t = tenant(e, "a", Policy::AllkeysLru);
    for i in 0..400 {
        e.set(t, &key(i), &val(i, 200), SetOptions::default())
            .unwrap();
        e.run_tier_workers();
    }
    for _ in 0..5 {
        for i in (0..400).step_by(7) {
            if let Some(v) = e.get(t, &key(i)) {
                assert_eq!(v, &val(i, 200)[..]);
            }
            e.run_tier_workers();
        }
    }
    let st = e.tenant_tier_stats(t).unwrap();
    assert!(st.demotions > 0 && st.promotions > 0, "{st:?}");
    assert!(st.tiers[1].items > 0);
    for i in 0..400 {
        if let Some(v) = e.peek(t, &key(i)) {
            assert_eq!(v, &val(i, 200)[..], "key {i}");
        }
    }
    e.check_invariants();
    t
}

#[test]
fn the_file_backend_keeps_slow_pages_in_the_file() {
    let dir = std::env::temp_dir().join(format!("locus-tiers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("slow.tier");
    // A stale file of the wrong size is truncated and resized.
    std::fs::write(&path, b"left over from an earlier run").unwrap();
    let (mut e, _) = engine_with(tiered_on(
        50,
        SlowBackend::File {
            path: path.to_str().unwrap().into(),
        },
    ));
    let ts = e.tier_stats().unwrap();
    let (file, len) = e.slow_tier_file().unwrap();
    assert_eq!(file, path);
    assert_eq!(
        len,
        ts.budget_pages[1] * 4096,
        "the mapping is the slow budget"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len, "file size");
    let t = round_trip(&mut e);
    // The slow items' bytes are in the file: every slow key appears in it.
    let bytes = std::fs::read(&path).unwrap();
    let slow: Vec<u64> = (0..400)
        .filter(|&i| e.item_tier(t, &key(i)) == Some(Tier::Slow))
        .collect();
    assert!(!slow.is_empty());
    for i in slow {
        let k = key(i);
        assert!(
            bytes.windows(k.len()).any(|w| w == &k[..]),
            "slow key {i} is not in the file"
        );
    }
    drop(e);
    assert!(!path.exists(), "the file is removed with the engine");
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn the_file_backend_refuses_a_path_it_cannot_write() {
    let cfg = tiered_on(
        50,
        SlowBackend::File {
            path: "/proc/self/no-such-file".into(),
        },
    );
    match Engine::new(cfg, std::sync::Arc::new(locus_common::VirtualClock::new(0))) {
        Err(EngineError::InvalidConfig { problems }) => {
            let p = problems.join("; ");
            assert!(
                p.contains("tier.slow_backend") && p.contains("/proc/self/no-such-file"),
                "{p}"
            );
        }
        other => panic!("accepted: {other:?}"),
    }
}

#[test]
fn the_numa_backend_binds_slow_pages_to_node_0() {
    let (mut e, _) = engine_with(tiered_on(50, SlowBackend::Numa { node: 0 }));
    let t = round_trip(&mut e);
    let s = (0..400)
        .find(|&i| e.item_tier(t, &key(i)) == Some(Tier::Slow))
        .unwrap();
    assert_eq!(e.item_numa_node(t, &key(s)), Some(0));
    assert!(e.slow_tier_file().is_none());
}

#[test]
fn the_numa_backend_binds_slow_pages_to_node_1() {
    if !std::path::Path::new("/sys/devices/system/node/node1").exists() {
        // Skipped loudly: a banner (shown with --nocapture) and a line in the skip log that
        // scripts/test.sh prints at the end, as the tests needing ../shared do.
        let why = "the_numa_backend_binds_slow_pages_to_node_1: SKIPPED, this machine has one \
                   NUMA node (no /sys/devices/system/node/node1; see numactl -H)";
        eprintln!("\n!!!!!!!! {why} !!!!!!!!\n");
        let log = std::env::var_os("LOCUS_SKIP_LOG")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../target/skipped-tests.txt")
            });
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            use std::io::Write;
            // One write of the whole line (see locus_testdata::require).
            let _ = f.write_all(format!("{why}\n").as_bytes());
        }
        return;
    }
    let (mut e, _) = engine_with(tiered_on(50, SlowBackend::Numa { node: 1 }));
    let t = round_trip(&mut e);
    for i in 0..400 {
        if e.item_tier(t, &key(i)) == Some(Tier::Slow) {
            assert_eq!(e.item_numa_node(t, &key(i)), Some(1), "key {i}");
        }
    }
}
