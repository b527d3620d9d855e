use std::sync::Arc;

use super::*;
use locus_common::{Rng, VirtualClock};
use locus_engine::config::{EngineConfig, LruClockMode, TenantConfig};
use locus_engine::control::{ControlConfig, Interval, IntervalRecord};
use locus_engine::{Engine, SetOptions, TenantId, TierConfig};

const PAGE: u64 = 4 << 10;

/// Two tenants sharing `pages` 4 KiB pages (100-byte values: ~32 items a page), logical clock.
fn engine(pages: u64, penalties: [f64; 2]) -> (Engine, VirtualClock, [TenantId; 2]) {
    engine_tiered(pages, penalties, None)
}

/// [`engine`], with memory tiers when `tier` is given.
fn engine_tiered(
    pages: u64,
    penalties: [f64; 2],
    tier: Option<TierConfig>,
) -> (Engine, VirtualClock, [TenantId; 2]) {
    let clock = VirtualClock::new(0);
    let mut e = Engine::new(
        EngineConfig {
            maxmemory: pages * PAGE,
            page_size: PAGE,
            lru_clock: LruClockMode::Logical,
            seed: 11,
            tier,
            ..EngineConfig::default()
        },
        Arc::new(clock.clone()),
    )
    .unwrap();
    let a = e.add_tenant(TenantConfig::new("a")).unwrap();
    let b = e.add_tenant(TenantConfig::new("b")).unwrap();
    e.set_penalty_hint(a, Some(penalties[0]));
    e.set_penalty_hint(b, Some(penalties[1]));
    (e, clock, [a, b])
}

fn install(e: &mut Engine, pairs: &[(&str, &str)], interval: u64) {
    let s = Settings::new(
        "kredis",
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    );
    e.set_controller(
        build(s).unwrap(),
        ControlConfig {
            interval: Interval::Requests(interval),
            max_moves: 256,
            offload: false,
        },
    );
}

/// Interleaves the tenants' streams at equal rates; a GET miss is followed by a SET.
fn drive(e: &mut Engine, clock: &VirtualClock, streams: [&mut dyn FnMut() -> u64; 2], n: usize) {
    let ts = e.tenant_ids();
    let mut pick = Rng::new(99);
    for _ in 0..n {
        clock.advance_us(10);
        let i = pick.below(2) as usize;
        let k = (streams[i])();
        let key = format!("key:{k}");
        if e.get(ts[i], key.as_bytes()).is_none() {
            let _ = e.set(ts[i], key.as_bytes(), &[1u8; 100], SetOptions::default());
        }
    }
}

fn uniform(n: u64, seed: u64) -> impl FnMut() -> u64 {
    let mut rng = Rng::new(seed);
    move || rng.below(n)
}

fn looping(n: u64) -> impl FnMut() -> u64 {
    let mut i = 0;
    move || {
        i = (i + 1) % n;
        i
    }
}

fn note(r: &IntervalRecord, name: &str) -> f64 {
    r.notes
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("note {name} missing in {:?}", r.notes))
        .1
}

fn last(e: &Engine) -> IntervalRecord {
    e.control_records().last().cloned().expect("a decision")
}

#[test]
fn settings_are_typed_and_unknown_keys_rejected() {
    for (k, v) in [
        ("ks", "0,5"),
        ("ks", "5,1"),
        ("exponent", "-1"),
        ("rate", "2"),
        ("unit", "pages"),
        ("objective", "speed"),
        ("decay", "1.5"),
        ("model", "lru"),
        ("fixed_k", "65"),
        ("partition", "maybe"),
    ] {
        let s = Settings::new("kredis", [(k.to_string(), v.to_string())]);
        assert!(
            matches!(build(s), Err(ControlError::BadSetting { ref key, .. }) if key == k),
            "{k} = {v}"
        );
    }
    let s = Settings::new("kredis", [("dynamic".to_string(), "true".to_string())]);
    assert!(matches!(build(s), Err(ControlError::UnknownSetting { key, .. }) if key == "dynamic"));
    let s = Settings::new(
        "kredis",
        [
            ("exponent".to_string(), "1.4".to_string()),
            ("objective".to_string(), "hits".to_string()),
            ("model".to_string(), "eaet".to_string()),
        ],
    );
    assert!(build(s).is_ok());
}

#[test]
fn the_steeper_curve_gets_the_pages() {
    // Equal penalties and rates. a: 2000 keys (its whole working set fits in ~63 pages and
    // each page saves 1/2000 of its misses per 32 items); b: 20000 keys (each page saves
    // ten times less). The DP gives a its working set and b the rest.
    let (mut e, clock, _) = engine(256, [1000.0, 1000.0]);
    install(&mut e, &[("rate", "0.1")], 40_000);
    let (mut a, mut b) = (uniform(2000, 1), uniform(20_000, 2));
    drive(&mut e, &clock, [&mut a, &mut b], 240_000);
    let r = last(&e);
    let (ta, tb) = (note(&r, "pool0.target"), note(&r, "pool1.target"));
    assert_eq!(ta + tb, 256.0);
    // About its working set (63 pages; the sampled curve puts it at 57 here).
    assert!((50.0..=110.0).contains(&ta), "a target {ta} (b {tb})");
    assert!(note(&r, "pool0.mr_predicted") < 0.15, "{:?}", r.notes);
    // The engine converged to the targets.
    let pages = &r.pages;
    assert!(
        pages[0] as f64 <= ta + 2.0 && pages[1] as f64 >= tb - 8.0,
        "{pages:?}"
    );
    assert!(r.curves.iter().any(|c| c.label == "mmrc"));
    assert!(r.curves.iter().any(|c| c.label == "krr K=16"));
}

#[test]
fn the_costlier_misses_get_the_pages() {
    // Same workload (uniform over 6000 keys, a straight MRC), penalties 2000 vs 200 µs: the
    // DP fills the 2000 µs tenant's working set first.
    let (mut e, clock, _) = engine(256, [200.0, 2000.0]);
    install(&mut e, &[("rate", "0.1")], 40_000);
    let (mut a, mut b) = (uniform(6000, 3), uniform(6000, 4));
    drive(&mut e, &clock, [&mut a, &mut b], 240_000);
    let r = last(&e);
    let (ta, tb) = (note(&r, "pool0.target"), note(&r, "pool1.target"));
    assert!(tb >= 170.0 && ta <= 86.0, "targets a {ta} b {tb}");
    // Swapping the penalties swaps the winner.
    let (mut e, clock, _) = engine(256, [2000.0, 200.0]);
    install(&mut e, &[("rate", "0.1")], 40_000);
    let (mut a, mut b) = (uniform(6000, 3), uniform(6000, 4));
    drive(&mut e, &clock, [&mut a, &mut b], 240_000);
    let r = last(&e);
    let (ta, tb) = (note(&r, "pool0.target"), note(&r, "pool1.target"));
    assert!(ta >= 170.0 && tb <= 86.0, "targets a {ta} b {tb}");
}

#[test]
fn k_per_tenant_is_the_argmin_at_its_target() {
    // a loops over 6000 keys, more than the whole cache: random eviction (K = 1) keeps part
    // of the loop, LRU none. b is uniform over 1000 keys.
    let (mut e, clock, _) = engine(128, [1000.0, 1000.0]);
    install(&mut e, &[("rate", "0.1"), ("unit", "objects")], 40_000);
    let (mut a, mut b) = (looping(6000), uniform(1000, 5));
    drive(&mut e, &clock, [&mut a, &mut b], 240_000);
    let r = last(&e);
    assert_eq!(note(&r, "pool0.k"), 1.0, "{:?}", r.notes);
    assert_eq!(r.samples[0], 1);
    // Fixed K: every pool gets fixed_k, and only its curve is built.
    let (mut e, clock, _) = engine(128, [1000.0, 1000.0]);
    install(
        &mut e,
        &[("rate", "0.1"), ("dynamic_k", "false"), ("fixed_k", "10")],
        40_000,
    );
    let (mut a, mut b) = (looping(6000), uniform(1000, 5));
    drive(&mut e, &clock, [&mut a, &mut b], 120_000);
    let r = last(&e);
    assert_eq!(r.samples, vec![10, 10]);
    assert!(r.curves.iter().all(|c| c.label == "krr K=10"));
}

#[test]
fn ablation_switches() {
    // Single pool: no targets, K still chosen.
    let (mut e, clock, _) = engine(128, [1000.0, 1000.0]);
    install(&mut e, &[("rate", "0.1"), ("partition", "false")], 40_000);
    let (mut a, mut b) = (looping(6000), uniform(1000, 5));
    drive(&mut e, &clock, [&mut a, &mut b], 120_000);
    assert_eq!(e.targets(), vec![None, None]);
    assert_eq!(last(&e).samples[0], 1);
    // No model: targets in proportion to GETs × penalty (1:3 here).
    let (mut e, clock, _) = engine(128, [500.0, 1500.0]);
    install(&mut e, &[("model", "none")], 40_000);
    let (mut a, mut b) = (uniform(6000, 3), uniform(6000, 4));
    drive(&mut e, &clock, [&mut a, &mut b], 120_000);
    let r = last(&e);
    let (ta, tb) = (note(&r, "pool0.target"), note(&r, "pool1.target"));
    assert!((tb / ta - 3.0).abs() < 0.3, "targets {ta} {tb}");
    assert!(r.curves.is_empty());
    assert_eq!(r.samples, vec![5, 5]);
    // EAET (exact LRU, pRedis's model) partitions too, K fixed.
    let (mut e, clock, _) = engine(256, [200.0, 2000.0]);
    install(&mut e, &[("rate", "0.1"), ("model", "eaet")], 40_000);
    let (mut a, mut b) = (uniform(6000, 3), uniform(6000, 4));
    drive(&mut e, &clock, [&mut a, &mut b], 160_000);
    let r = last(&e);
    assert!(
        note(&r, "pool1.target") > note(&r, "pool0.target"),
        "{:?}",
        r.notes
    );
    assert!(r.curves.iter().all(|c| c.label == "eaet"));
}

/// Issue 16: a tenant of 50 keys beside a large one. At a fixed 1% spatial rate it had no sampled
/// key and no curve; with the per-pool key budget it is profiled whole (rate 1), gets a curve
/// and a page target that holds it, while the large tenant is sampled within the budget.
#[test]
fn a_tenant_of_fifty_keys_gets_a_curve_and_an_allocation() {
    let (mut e, clock, _) = engine(128, [5000.0, 100.0]);
    install(&mut e, &[("sample_keys", "1000")], 40_000);
    let (mut a, mut b) = (uniform(50, 6), uniform(40_000, 7));
    drive(&mut e, &clock, [&mut a, &mut b], 240_000);
    let r = last(&e);
    let curve = r
        .curves
        .iter()
        .find(|c| c.pool == PoolId(0) && c.label == "mmrc")
        .unwrap_or_else(|| panic!("no curve for the small pool: {:?}", r.notes));
    // The curve falls from 1 to ~0 within the first recorded step (3 pages here).
    let pts = curve.mrc.points();
    assert!(pts[0].1 > 0.9, "{pts:?}");
    assert!(pts[1].1 < 0.05, "{pts:?}");
    // 50 items of ~130 bytes fill 2 pages: the target is that, not the 5 pages that one
    // sampled key at 1% (the old fixed rate) stood for.
    let ta = note(&r, "pool0.target");
    assert!(
        (2.0..=3.0).contains(&ta),
        "small tenant target {ta}: {:?}",
        r.notes
    );
    assert!(note(&r, "pool0.mr_predicted") < 0.05, "{:?}", r.notes);
    assert!(r.curves.iter().any(|c| c.pool == PoolId(1)));
    assert_eq!(note(&r, "pool0.rate"), 1.0);
    assert_eq!(note(&r, "pool0.sampled_keys"), 50.0);
    assert!(note(&r, "pool1.rate") < 0.05, "{:?}", r.notes);
    assert!(note(&r, "pool1.sampled_keys") <= 1000.0);
    // The small tenant hits: its 50 keys stay.
    let small = e.tenant_stats(e.tenant_ids()[0]);
    assert!(
        small.hits as f64 > 0.95 * (small.hits + small.misses) as f64,
        "{small:?}"
    );
}

/// Two tenants on a tiered engine of 512 pages, 40% of them fast (204 pages): `a` reads 2,000
/// keys (~63 pages: its working set fits the fast tier with room to spare), `b` 20,000 (~625
/// pages).
fn tiered_run(pairs: &[(&str, &str)]) -> (Engine, [TenantId; 2]) {
    tiered_run_with(pairs, &mut uniform(20_000, 2))
}

/// [`tiered_run`] with `b` reading the keys `b_keys` draws.
fn tiered_run_with(
    pairs: &[(&str, &str)],
    b_keys: &mut dyn FnMut() -> u64,
) -> (Engine, [TenantId; 2]) {
    let tier = TierConfig {
        fast_share: 0.4,
        ..TierConfig::default()
    };
    let (mut e, clock, ts) = engine_tiered(512, [1000.0, 1000.0], Some(tier));
    install(&mut e, pairs, 40_000);
    let mut a = uniform(2000, 1);
    drive(&mut e, &clock, [&mut a, b_keys], 240_000);
    (e, ts)
}

#[test]
fn on_a_tiered_engine_the_fast_tier_goes_to_the_steeper_curve() {
    // Equal rates and penalties: a fast page saves a ten times more of a's misses than of b's,
    // so the DP over the fast tier's 204 pages gives a about its working set (~63 pages; an
    // equal split would be 102) and b the rest; the engine carries the targets out in bytes.
    let (e, ts) = tiered_run(&[("rate", "0.1")]);
    let r = last(&e);
    let (fa, fb) = (note(&r, "pool0.fast_target"), note(&r, "pool1.fast_target"));
    assert_eq!(
        fa + fb,
        204.0,
        "the whole fast tier is planned: {fa} + {fb}"
    );
    assert!((50.0..=85.0).contains(&fa), "a's fast target {fa} pages");
    for (t, pages) in ts.iter().zip([fa, fb]) {
        let s = e.tenant_tier_stats(*t).unwrap();
        assert_eq!(s.fast_target_bytes, Some(pages as u64 * PAGE));
    }
    // a's working set is fast; most of b's reads go to the slow tier or miss.
    let fast_share = |t: TenantId| {
        let s = e.tenant_tier_stats(t).unwrap();
        s.tiers[0].hits as f64 / (s.tiers[0].hits + s.tiers[1].hits).max(1) as f64
    };
    assert!(
        fast_share(ts[0]) > fast_share(ts[1]),
        "fast hit shares a {} b {}",
        fast_share(ts[0]),
        fast_share(ts[1])
    );
}

#[test]
fn without_tiers_or_partitioning_no_fast_targets_are_set() {
    // Untiered: the view has no fast budget and the decision carries none.
    let (mut e, clock, _) = engine(256, [1000.0, 1000.0]);
    install(&mut e, &[("rate", "0.1")], 40_000);
    let (mut a, mut b) = (uniform(2000, 1), uniform(20_000, 2));
    drive(&mut e, &clock, [&mut a, &mut b], 120_000);
    assert!(last(&e).notes.iter().all(|(n, _)| !n.contains("fast")));
    // Tiered, `partition = false` (the single-pool ablation): none either.
    let (e, ts) = tiered_run(&[("rate", "0.1"), ("partition", "false")]);
    assert!(last(&e).notes.iter().all(|(n, _)| !n.contains("fast")));
    for t in ts {
        assert_eq!(e.tenant_tier_stats(t).unwrap().fast_target_bytes, None);
    }
    // `model = none`: the fast tier in proportion to GETs × penalty (about half each).
    let (e, _) = tiered_run(&[("model", "none")]);
    let r = last(&e);
    let fa = note(&r, "pool0.fast_target");
    let sum = fa + note(&r, "pool1.fast_target");
    assert!(
        (203.0..=204.0).contains(&sum),
        "proportional shares sum to {sum}"
    );
    assert!(
        (92.0..=112.0).contains(&fa),
        "a's proportional fast target {fa}"
    );
}

#[test]
fn a_scanner_gets_no_fast_target_and_unvalued_pages_go_to_the_served_pool() {
    // b loops over 20,000 keys (~625 pages, more than the fast tier's 204): its curve is flat
    // over the fast tier, so a fast page saves (almost) none of its misses and it gets (almost)
    // none; a gets its working set and the pages neither curve values (a's fast share serves
    // GETs, b's does not).
    let tier = TierConfig {
        fast_share: 0.4,
        ..TierConfig::default()
    };
    let (mut e, clock, ts) = engine_tiered(512, [1000.0, 1000.0], Some(tier));
    install(&mut e, &[("rate", "0.1")], 40_000);
    let (mut a, mut b) = (uniform(2000, 1), looping(20_000));
    drive(&mut e, &clock, [&mut a, &mut b], 240_000);
    let r = last(&e);
    let (fa, fb) = (note(&r, "pool0.fast_target"), note(&r, "pool1.fast_target"));
    // K = 16's curve is close to LRU's, not equal: it may credit the loop a page or two.
    assert!(fb <= 4.0, "the scanner's fast target {fb} pages");
    assert_eq!(fa + fb, 204.0, "every fast page is assigned: {fa} + {fb}");
    // b's loop is longer than its fast share: with the targets in force its reads are served
    // from the slow tier. (Counted from here: until the loop shows its first reuse no targets
    // are set and the fast tier is free for it.)
    let s0 = e.tenant_tier_stats(ts[1]).unwrap();
    drive(&mut e, &clock, [&mut a, &mut b], 120_000);
    let s = e.tenant_tier_stats(ts[1]).unwrap();
    let (fast, slow) = (
        s.tiers[0].hits - s0.tiers[0].hits,
        s.tiers[1].hits - s0.tiers[1].hits,
    );
    assert!(fast * 10 < slow, "b's hits fast {fast} slow {slow}");
}

/// K changes per pool after the first ten decisions, and the decisions counted.
fn k_changes(e: &Engine) -> (Vec<usize>, usize) {
    let recs = e.control_records();
    let ks: Vec<&Vec<u32>> = recs.iter().skip(10).map(|r| &r.samples).collect();
    let n = ks.first().map_or(0, |k| k.len());
    let changes = (0..n)
        .map(|i| ks.windows(2).filter(|w| w[0][i] != w[1][i]).count())
        .collect();
    (changes, ks.len())
}

/// A stationary workload (two Zipf-like tenants whose K = 5, 8 and 16 curves are close): after
/// the first ten decisions a pool's K changes at most once per ten decisions. Without the
/// hysteresis (`k_min_gain = 0`, the argmin at every decision, as before issue 29) it flaps.
#[test]
fn k_settles_on_a_stationary_workload() {
    let run = |k_min_gain: &str| {
        let (mut e, clock, _) = engine(96, [1000.0, 1000.0]);
        install(
            &mut e,
            &[("rate", "0.2"), ("k_min_gain", k_min_gain)],
            10_000,
        );
        let zipfish = |n: u64, seed: u64| {
            let mut rng = Rng::new(seed);
            // Squared uniform: a skewed, stationary popularity over n keys.
            move || {
                let u = rng.below(1 << 20) as f64 / (1u64 << 20) as f64;
                (u * u * n as f64) as u64
            }
        };
        let (mut a, mut b) = (zipfish(8000, 7), zipfish(5000, 8));
        drive(&mut e, &clock, [&mut a, &mut b], 500_000);
        k_changes(&e)
    };
    let (settled, decisions) = run("0.1");
    assert!(decisions >= 40, "{decisions} decisions");
    for (i, c) in settled.iter().enumerate() {
        assert!(
            *c <= decisions / 10,
            "pool {i}: {c} K changes in {decisions} decisions"
        );
    }
    let (flapping, _) = run("0");
    assert!(
        flapping.iter().any(|&c| c > decisions / 10),
        "without the margin K flaps: {flapping:?} changes in {decisions} decisions"
    );
}

/// A costly loop beside a cheap tenant that takes any page left, KRR at R = 0.05: the loop's
/// sample holds `Binomial(N, 0.05)` of its keys, so its sampled cliff lands ±1/√(0.05·N) off
/// (±8% at 3,000 keys) and a short sample puts the target below the real cliff, where the loop
/// misses most requests (fifteen tenants in experiments/kredis.md: a 4096 µs loop at 70% hits).
/// With the measured rate (the sample's keys over the pool's HyperLogLog count of distinct keys)
/// every loop size here is held whole; with the nominal rate (`measured_rate = false`) at least
/// one is not. Loop sizes and the cheap tenant are not the fifteen-tenant mix's.
#[test]
fn a_short_sample_does_not_put_a_loop_below_its_cliff() {
    // Hit ratio of pool 0 over the last five decisions' intervals.
    let run = |n: u64, measured: &str| {
        let (mut e, clock, _) = engine(200, [2000.0, 50.0]);
        install(
            &mut e,
            &[("rate", "0.05"), ("measured_rate", measured)],
            20_000,
        );
        let (mut a, mut b) = (looping(n), uniform(100_000, 21));
        drive(&mut e, &clock, [&mut a, &mut b], 600_000);
        let recs = e.control_records();
        let tail = &recs[recs.len() - 5..];
        let hits: u64 = tail.iter().map(|r| r.hits[0]).sum();
        let misses: u64 = tail.iter().map(|r| r.misses[0]).sum();
        hits as f64 / (hits + misses).max(1) as f64
    };
    let sizes = [2600u64, 3000, 3400, 3800, 4200];
    let measured: Vec<f64> = sizes.iter().map(|&n| run(n, "true")).collect();
    let nominal: Vec<f64> = sizes.iter().map(|&n| run(n, "false")).collect();
    for (n, h) in sizes.iter().zip(&measured) {
        assert!(*h > 0.97, "loop of {n}: {h:.3} hits (all: {measured:?})");
    }
    assert!(
        nominal.iter().any(|&h| h < 0.9),
        "the nominal rate never put a loop below its cliff: {nominal:?}"
    );
}

/// Warm-up waits for a loop's first reuse even when its sample is not exactly R of its keys:
/// SHARDS's `_adj` then moves the sampled curve's level (a loop in its first pass showed, say,
/// 0.92 at every size), and the old test, "miss ratio at all of memory below 1", took that for
/// reuse and partitioned at the first decision (fifteen tenants in experiments/kredis.md: 399
/// pages to one tenant, one page to each loop). Every decision before the loop's first reuse
/// sets no targets; the first decisions after it do.
#[test]
fn warm_up_waits_for_a_loops_first_reuse_at_a_sampled_rate() {
    let (mut e, clock, _) = engine(256, [1000.0, 1000.0]);
    install(&mut e, &[("rate", "0.05")], 4_000);
    // a: 6000 keys, first reuse after about 12,000 requests (a GET miss and its SET are two
    // engine accesses, the interval counts accesses); b: 500 hot keys.
    let (mut a, mut b) = (looping(6000), uniform(500, 9));
    drive(&mut e, &clock, [&mut a, &mut b], 40_000);
    let recs = e.control_records();
    let waiting: Vec<bool> = recs
        .iter()
        .map(|r| r.notes.iter().any(|(n, _)| n == "warming_up"))
        .collect();
    // The first pass of a takes 6000 of a's GETs: about 18,000 accesses (GET + SET for a's
    // misses and b's first touches), four or more decisions.
    assert!(
        waiting.iter().take(4).all(|&w| w),
        "decisions before the loop's first reuse: {waiting:?}"
    );
    assert!(
        recs.iter()
            .take(4)
            .all(|r| r.targets.iter().all(Option::is_none)),
        "targets before the loop's first reuse"
    );
    let last = recs.last().expect("decisions");
    assert!(
        last.targets.iter().all(Option::is_some),
        "targets once the loop shows reuse: {waiting:?}"
    );
}

/// A dear tenant whose footprint keeps growing (a static Zipf's tail brings new keys all run)
/// beside a cheap one that gains from every page it gets. A KRR curve is flat past the largest
/// reuse distance it has seen, so with `growth = 0` the dear tenant's target follows its
/// footprint just above it and the tenant evicts its own keys each time it grows into it
/// (experiments/kredis.md: fifteen Zipf slices of one cluster); read one interval of growth to
/// the left (the default), its curve leaves it the room. Not the experiments' mix: one
/// Zipf(1.1) of 30,000 keys against a uniform tenant.
#[test]
fn a_growing_dear_tenant_is_not_held_at_its_footprint() {
    let run = |growth: &str| {
        let (mut e, clock, _) = engine(600, [2000.0, 20.0]);
        install(&mut e, &[("rate", "0.05"), ("growth", growth)], 10_000);
        let zipf = locus_common::Zipf::new(30_000, 1.1);
        let mut rng = Rng::new(5);
        let mut seen = std::collections::HashSet::new();
        let mut a = || {
            let k = zipf.sample(&mut rng);
            seen.insert(k);
            k
        };
        let mut b = uniform(200_000, 21);
        drive(&mut e, &clock, [&mut a, &mut b], 600_000);
        let recs = e.control_records();
        let last = recs.last().expect("decisions");
        // Misses beyond the first request of each key (which no memory saves).
        last.misses[0] - seen.len() as u64
    };
    let (with, without) = (run("1"), run("0"));
    eprintln!("dear tenant's misses of keys it held before: growth 1 {with}, growth 0 {without}");
    assert!(
        (with as f64) < 0.8 * without as f64,
        "misses of keys held before: growth 1 {with}, growth 0 {without}"
    );
}
