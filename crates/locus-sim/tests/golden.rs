//! Golden numbers: every `experiments/*.toml`, scaled down by its `[golden]` table, must give the
//! hit ratios (per controller, per tenant, 4 decimals; per steady-state window for experiments
//! with `steady`) and the best-to-worst ordering recorded in `tests/golden/<name>.json`.
//!
//! Runs are deterministic (seeded generators, virtual clock, seeded engine), so any difference is
//! a behaviour change: review it, then regenerate the files deliberately with
//!
//! ```text
//! LOCUS_BLESS=1 cargo test --release -p locus-sim --test golden
//! ```
//! (In a debug build the check is `#[ignore]`d: it takes minutes there and seconds in release,
//! where `scripts/test.sh` runs it.)
//! and commit the diff of `tests/golden/` with the change that caused it. `LOCUS_GOLDEN=a,b`
//! checks (or blesses) only the experiments of those names.
//!
//! Separately from the snapshot, each experiment's headline claims ([`CLAIMS`]: an ordering with
//! a margin on the headline metric, at the golden scale where it holds) and the oracle's bound
//! (no controller that only partitions beats it by more than [`ORACLE_NOISE`]) are checked on
//! every run, blessing included: a regression that breaks a controller fails here even after
//! the snapshot is re-blessed. `LOCUS_REPLACE=label,…` runs those controllers as `shared` and
//! checks only the claims (the snapshot differs by construction): every claim naming one of them
//! must then fail, unless `shared` happens to satisfy it too.
//!
//! `LOCUS_REPLACE` tried for every label, one at a time (2026-11-25, release build; "-" = no
//! claim fails, with the reason; the MemSweeper rows re-tried after Fair's guard moved to hit
//! ratios):
//!
//! | experiment | label → the claim that fails |
//! |---|---|
//! | dlru_k_sensitive | K=1, K=2, K=10, K=16 → the K ordering on orm; dlru, K=5 - (dlru falls back to K = 5 at 200k requests; K = 5 is `shared` by construction) |
//! | dlru_two_phase | dlru → vs K=5 overall and per phase; K=1, K=2 → vs K=5; K=5 - (= `shared`); K=10, K=16 - (behind K = 5 in both phases here: their claim is on orm) |
//! | example | oracle → vs shared; static-equal → web tenant vs shared |
//! | kredis_four_tenants | kredis, kredis-K5, kredis-eaet, kredis-1pool, kredis-nomodel, predis → vs shared (and kredis vs predis, one pool) |
//! | kredis_tight | kredis → vs predis, shared; the others - (checked on four tenants; here pRedis's gain over shared is inside its seed spread and one pool is worse than shared) |
//! | lama_etc | lama-mr, lama-art, lama-1win, lama-noedge, slab-oracle → vs memcached; memcached, twemcache → memcached vs twemcache; automove, facebook → the 5% bound over memcached; psa - (behind memcached on ETC at this scale) |
//! | lama_phases | lama-mr, lama-1win, psa, slab-oracle, slab-oracle-run → vs memcached; memcached, automove, facebook, twemcache - (checked on lama_etc) |
//! | lama_qos | lama-qos-app2 → APP2 vs lama-joint, vs memcached; lama-joint, memcached - (`shared` serves APP2 worse than the QoS run does too, and is behind it overall); lama-mr, lama-qos-app1, lama-qos-app2-97 - (no claim: plain LAMA is checked on lama_etc and lama_phases; APP1's target and the out-of-reach one are reported, not pinned) |
//! | memsweeper-cliff | memshare, memshare-need, memshare-deep → loop tenant vs Max; memsweeper-fair-paper → loop tenant vs Fair; static → vs Max; memsweeper-max, memsweeper-fair - (`shared` holds the loop too and is best here) |
//! | memsweeper-fairness | memsweeper-max → fast tenant vs Fair, Fair's worst tenant vs Max's; memsweeper-fair → its worst tenant vs shared and vs Fair with the guard in hits; oracle → memshare beats it; memsweeper-fair-hits, memsweeper-fair-paper, memshare, static - (references for Fair's guard, `shared` starves the slow tenant as they do; the others are checked on the cliff and mpart experiments) |
//! | mpart_noisy | mpart → vs shared, memshare; memshare → vs shared; oracle → the bound |
//! | mpart_table2 | memshare-* → mPart vs Memshare per allocation; mpart-*, oracle - (`shared` is the oracle's plan at this scale, every run within 0.2%) |
//! | oracle_packing | - for all four (`shared` is the oracle's plan; the file checks the oracle's bound) |
//! | predis_dump_load | auto, schedule → vs none; none - (= `shared`) |
//! | predis_three_class | predis, oracle → vs shared; hyperbolic - (worse than LRU on this trace) |
//! | predis_ycsb, _b … _f | predis, oracle, hyperbolic (and hyperbolic-K5) → vs shared |
//!
//! Every registered controller thus has a claim that fails when it is replaced. `memsweeper-fair`
//! was the last exception: with its guard in hits its outcome was within the seed spread of free
//! competition's on both MemSweeper experiments; with the guard in hit ratios its worst tenant
//! misses 45.0% (golden seed) where `shared` leaves it 49.1%.
//!
//! A second test, [`the_oracle_is_never_beaten_by_a_partitioner_over_seeds`], checks the
//! oracle's bound under [`ORACLE_SEEDS`] seeds of every experiment with an oracle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use locus_sim::experiment::{ControllerRun, Experiment};
use locus_sim::{Options, Report, simulate};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// The golden summary of a report.
fn summary(r: &Report) -> Value {
    let mut hit = BTreeMap::new();
    for run in &r.runs {
        let mut t: BTreeMap<String, f64> = run
            .tenants
            .iter()
            .map(|t| (t.name.clone(), round4(t.hit_ratio)))
            .collect();
        t.insert("overall".into(), round4(run.overall.hit_ratio));
        hit.insert(run.label.clone(), t);
    }
    let failed: Vec<&str> = r.failed.iter().map(|(l, _)| l.as_str()).collect();
    let mut v = json!({
        "experiment": r.name,
        "metric": r.metric,
        "ordering": r.ordering,
        "hit_ratio": hit,
        "failed": failed,
    });
    // Experiments with `steady` also record each steady-state window's overall hit ratio.
    if r.runs.iter().any(|run| !run.steady.is_empty()) {
        let steady: BTreeMap<String, BTreeMap<String, f64>> = r
            .runs
            .iter()
            .map(|run| {
                let w = run
                    .steady
                    .iter()
                    .map(|w| (w.name.clone(), round4(w.overall.hit_ratio)))
                    .collect();
                (run.label.clone(), w)
            })
            .collect();
        v["steady_hit_ratio"] = json!(steady);
    }
    v
}

/// Lines that differ between two summaries (keys in order).
fn differences(want: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let p = format!("{path}.{k}");
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => differences(x, y, &p, out),
                    (x, y) => out.push(format!("{p}: golden {x:?}, now {y:?}")),
                }
            }
        }
        (a, b) if a != b => out.push(format!("{path}: golden {a}, now {b}")),
        _ => {}
    }
}

/// Whether every trace file `file` names exists; a missing one under `../shared` is a loud skip
/// of that experiment (locus_testdata), a missing one elsewhere is left to the loader's error.
fn shared_traces_present(file: &Path) -> bool {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let doc: toml::Table = match text.parse() {
        Ok(d) => d,
        Err(_) => return true, // the loader reports the syntax error
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let tenants = doc.get("tenant").and_then(|t| t.as_array());
    let paths = tenants
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("trace")?.get("path")?.as_str());
    for p in paths {
        let path = dir.join(p);
        if p.contains("shared/") && !path.exists() {
            let test = format!(
                "experiments_match_their_golden_numbers[{}]",
                file.file_stem().and_then(|s| s.to_str()).unwrap_or("?")
            );
            return locus_testdata::require(&test, &path).is_some();
        }
    }
    true
}

/// The experiment files (`experiments/*.toml`, sorted), without hidden ones (the per-seed copies
/// `experiments/seeds.py` writes beside the original while it runs).
fn experiment_files() -> Vec<PathBuf> {
    let dir = root().join("experiments");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no experiments in {}", dir.display());
    files
}

/// Where a claim reads the headline metric (mean latency, or miss ratio without penalties).
#[derive(Clone, Copy)]
enum Scope {
    /// The run's overall figure.
    Overall,
    /// One tenant's figure.
    Tenant(&'static str),
    /// One steady-state window's overall figure (experiments with `steady`).
    Steady(&'static str),
    /// The worst tenant's figure (a fairness claim: how badly the least-served tenant does).
    Worst,
}

/// A headline claim: in experiment `exp`, `better`'s headline metric (lower is better) on `on`
/// is at most `ratio` times `worse`'s.
struct Claim {
    exp: &'static str,
    better: &'static str,
    worse: &'static str,
    ratio: f64,
    on: Scope,
}

/// A claim on the headline metric read at `on`.
const fn scoped(
    exp: &'static str,
    better: &'static str,
    worse: &'static str,
    ratio: f64,
    on: Scope,
) -> Claim {
    Claim {
        exp,
        better,
        worse,
        ratio,
        on,
    }
}

/// A claim on the overall headline metric.
const fn claim(exp: &'static str, better: &'static str, worse: &'static str, ratio: f64) -> Claim {
    scoped(exp, better, worse, ratio, Scope::Overall)
}

/// A claim on one tenant's headline metric.
const fn tenant_claim(
    exp: &'static str,
    tenant: &'static str,
    better: &'static str,
    worse: &'static str,
    ratio: f64,
) -> Claim {
    scoped(exp, better, worse, ratio, Scope::Tenant(tenant))
}

/// A claim on the worst tenant's headline metric (each run's own worst tenant).
const fn worst_claim(
    exp: &'static str,
    better: &'static str,
    worse: &'static str,
    ratio: f64,
) -> Claim {
    scoped(exp, better, worse, ratio, Scope::Worst)
}

/// A claim on one steady-state window's headline metric.
const fn steady_claim(
    exp: &'static str,
    window: &'static str,
    better: &'static str,
    worse: &'static str,
    ratio: f64,
) -> Claim {
    scoped(exp, better, worse, ratio, Scope::Steady(window))
}

/// The claims each experiment reproduces at its golden scale, with margins well inside the
/// measured gaps (golden values in the comments; the write-ups give the full-scale ones). Claims
/// that do not hold at the golden scale are not listed (see EXPERIMENTS.md: dlru on orm-night
/// falls back at 200k requests; memsweeper-cliff and mpart_table2, where `shared` is best there;
/// memsweeper-fairness's overall miss ratio: its claims are on the worst tenant, the fairness
/// Fair promises).
const CLAIMS: &[Claim] = &[
    // DLRU beats the default K = 5 on the two-phase workload (63.8 vs 69.9 µs), and in each
    // phase's steady state it beats the fixed K that is wrong for that phase (random-friendly:
    // 80.5 vs K=5's 108.3 µs; lru-friendly: 26.9 vs K=1's 30.0 µs).
    claim("dlru_two_phase", "dlru", "K=5", 0.95),
    steady_claim("dlru_two_phase", "random-friendly", "dlru", "K=5", 0.85),
    steady_claim("dlru_two_phase", "lru-friendly", "dlru", "K=1", 0.95),
    // No single K is best (the premise of DLRU): on the loop phase random eviction wins (K=1
    // 58.9, K=2 65.2 vs K=5 69.9 µs over the run) ...
    claim("dlru_two_phase", "K=1", "K=5", 0.9),
    claim("dlru_two_phase", "K=2", "K=5", 0.97),
    // ... while on the orm trace the larger K win (K=1 20.14, K=2 18.76, K=5 18.28, K=10
    // 18.15, K=16 18.14 µs; over 5 seeds every range is disjoint from its neighbour's:
    // K=5 18.250-18.285, K=10 18.144-18.158, K=16 18.136-18.149).
    claim("dlru_k_sensitive", "K=5", "K=1", 0.95),
    claim("dlru_k_sensitive", "K=10", "K=2", 0.985),
    claim("dlru_k_sensitive", "K=10", "K=5", 0.997),
    claim("dlru_k_sensitive", "K=16", "K=5", 0.997),
    // kRedis beats free competition, pRedis and a single pool (282.6 / 689.8, 365.2, 520.2 µs).
    claim("kredis_four_tenants", "kredis", "shared", 0.6),
    claim("kredis_four_tenants", "kredis", "predis", 0.9),
    claim("kredis_four_tenants", "kredis", "kredis-1pool", 0.7),
    // Each of kRedis's mechanisms alone beats free competition (over 5 seeds at most: K5 293.5,
    // eaet 290.9, no model 258.0, one pool 534.6 µs; shared at least 686.3), and so does pRedis
    // (at most 370.1): the partition and the K tuning each carry part of the gain.
    claim("kredis_four_tenants", "kredis-K5", "shared", 0.6),
    claim("kredis_four_tenants", "kredis-eaet", "shared", 0.6),
    claim("kredis_four_tenants", "kredis-nomodel", "shared", 0.6),
    claim("kredis_four_tenants", "kredis-1pool", "shared", 0.85),
    claim("kredis_four_tenants", "predis", "shared", 0.7),
    // Tight memory: kRedis beats pRedis and free competition (490.8 / 637.6, 763.2 µs).
    claim("kredis_tight", "kredis", "predis", 0.85),
    claim("kredis_tight", "kredis", "shared", 0.8),
    // LAMA beats memcached's default and its movers (463.0 / 534.1, 534.9, 545.9, 534.1 µs).
    claim("lama_etc", "lama-mr", "memcached", 0.95),
    claim("lama_etc", "lama-mr", "automove", 0.95),
    claim("lama_etc", "lama-mr", "psa", 0.95),
    claim("lama_etc", "lama-mr", "facebook", 0.95),
    // Its variants too (OPT_ART equals OPT_MR when every miss costs the same; the first
    // version 436.0; without the edge correction 464.1 µs), and the slab oracle (434.8 µs) is
    // the bound they approach.
    claim("lama_etc", "lama-art", "memcached", 0.95),
    claim("lama_etc", "lama-1win", "memcached", 0.9),
    claim("lama_etc", "lama-noedge", "memcached", 0.95),
    claim("lama_etc", "slab-oracle", "memcached", 0.9),
    // Twemcache's random slab eviction is the worst (941.8 µs; 940.5-942.8 over 5 seeds).
    claim("lama_etc", "memcached", "twemcache", 0.7),
    // Bounds, not the paper's claims: memcached's automove and Facebook's age balancing find
    // almost nothing to move here (534.9 and 534.1 µs), and a mover must not cost more than 5%
    // over not moving. (The paper finds Facebook's policy closest to LAMA: not reproduced at
    // this scale, where it never moves; see lama.md.)
    claim("lama_etc", "automove", "memcached", 1.05),
    claim("lama_etc", "facebook", "memcached", 1.05),
    // Phases: LAMA beats memcached and PSA (484.2 / 588.4, 516.6 µs).
    claim("lama_phases", "lama-mr", "memcached", 0.9),
    claim("lama_phases", "lama-mr", "psa", 0.97),
    // After the phase changes memcached's calcified split loses to PSA's moves (516.6 µs), to
    // the best split of the whole run (496.7) and of each phase (463.9); the per-phase plan
    // beats the whole-run one.
    claim("lama_phases", "psa", "memcached", 0.93),
    claim("lama_phases", "lama-1win", "memcached", 0.9),
    claim("lama_phases", "slab-oracle-run", "memcached", 0.92),
    claim("lama_phases", "slab-oracle", "memcached", 0.85),
    claim("lama_phases", "slab-oracle", "slab-oracle-run", 0.97),
    // MemSweeper finds the far-off cliff: the loop tenant misses 10% under Max and Fair (its
    // guard), 100% under Memshare (need or credit rule) and static, 41% with Memshare's shadow
    // queue as deep as memory, 31% under Fair without the guard (over 5 seeds: Max at most
    // 0.103, deep at least 0.390, unguarded Fair at least 0.287); overall Max misses 17.1%
    // against static's 47.3%.
    tenant_claim(
        "memsweeper-cliff",
        "loop",
        "memsweeper-max",
        "memshare",
        0.5,
    ),
    tenant_claim(
        "memsweeper-cliff",
        "loop",
        "memsweeper-max",
        "memshare-need",
        0.5,
    ),
    tenant_claim(
        "memsweeper-cliff",
        "loop",
        "memsweeper-max",
        "memshare-deep",
        0.5,
    ),
    tenant_claim(
        "memsweeper-cliff",
        "loop",
        "memsweeper-fair",
        "memsweeper-fair-paper",
        0.6,
    ),
    claim("memsweeper-cliff", "memsweeper-max", "static", 0.5),
    // Max lets the fast tenant take memory: it misses 32.4% there against Fair's 39.6% (over
    // 5 seeds Max at most 0.328, Fair at least 0.392).
    tenant_claim(
        "memsweeper-fairness",
        "fast",
        "memsweeper-max",
        "memsweeper-fair",
        0.93,
    ),
    // Fair's promise (§5.5): a tenant's request rate does not buy it memory, so the slower of
    // two equal tenants is not starved. Its worst tenant (the slow one) misses 45.2% against
    // 48.9% under free competition and 57.4% under Max (over 5 seeds at most 45.6, shared at
    // least 48.3, Max at least 56.6).
    worst_claim("memsweeper-fairness", "memsweeper-fair", "shared", 0.96),
    worst_claim(
        "memsweeper-fairness",
        "memsweeper-fair",
        "memsweeper-max",
        0.9,
    ),
    // The guard in hit ratios is what keeps it: Fair with the first guard, in hits, lets the
    // fast tenant's rate win it pages (its slow tenant misses 48.5%, at least 48.1 over 5
    // seeds).
    worst_claim(
        "memsweeper-fairness",
        "memsweeper-fair",
        "memsweeper-fair-hits",
        0.97,
    ),
    // mPart beats free competition and Memshare on the noisy neighbour (634.5 / 697.5, 669.0 µs).
    claim("mpart_noisy", "mpart", "shared", 0.95),
    claim("mpart_noisy", "mpart", "memshare", 0.98),
    // Memshare beats free competition there (669.0 / 697.5 µs; over 5 seeds at most 674.0
    // against at least 694.4).
    claim("mpart_noisy", "memshare", "shared", 0.98),
    // mPart's Table 2: mPart beats Memshare from each initial allocation (1073.4 / 1078.3,
    // 1073.9 / 1088.2, 1073.1 / 1085.5 µs). A thin margin, but the ranges of 5 seeds are
    // disjoint (mPart at most 1075.8, Memshare at least 1078.3).
    claim("mpart_table2", "mpart-wss90", "memshare-wss90", 0.999),
    claim("mpart_table2", "mpart-unique75", "memshare-unique75", 0.998),
    claim("mpart_table2", "mpart-equal", "memshare-equal", 0.998),
    // pRedis beats Redis (shared) on every workload (three classes 45.0 / 101.0 ms; YCSB A-F
    // 82.7 / 131.1, 69.3 / 93.5, 68.2 / 93.6, 61.8 / 69.7, 113.2 / 279.1, 80.8 / 100.3 µs).
    claim("predis_three_class", "predis", "shared", 0.6),
    claim("predis_ycsb", "predis", "shared", 0.8),
    claim("predis_ycsb_b", "predis", "shared", 0.85),
    claim("predis_ycsb_c", "predis", "shared", 0.85),
    claim("predis_ycsb_d", "predis", "shared", 0.95),
    claim("predis_ycsb_e", "predis", "shared", 0.6),
    claim("predis_ycsb_f", "predis", "shared", 0.9),
    // Hyperbolic caching, pRedis's cost-aware baseline, also beats LRU on YCSB (74.2, 76.3 with
    // K = 5 / 131.1; B-F: 65.4 / 93.5, 65.2 / 93.6, 56.6 / 69.7, 146.1 / 279.1, 72.4 / 100.3 µs).
    claim("predis_ycsb", "hyperbolic", "shared", 0.7),
    claim("predis_ycsb", "hyperbolic-K5", "shared", 0.7),
    claim("predis_ycsb_b", "hyperbolic", "shared", 0.8),
    claim("predis_ycsb_c", "hyperbolic", "shared", 0.8),
    claim("predis_ycsb_d", "hyperbolic", "shared", 0.9),
    claim("predis_ycsb_e", "hyperbolic", "shared", 0.65),
    claim("predis_ycsb_f", "hyperbolic", "shared", 0.85),
    // pRedis's dump/load (detected or scheduled) beats keeping the periodic tenant's keys
    // (245.2, 244.5 / 270.6 µs).
    claim("predis_dump_load", "auto", "none", 0.95),
    claim("predis_dump_load", "schedule", "none", 0.95),
    // The oracle beats free competition on the example (222.9 / 243.8 µs).
    claim("example", "oracle", "shared", 0.95),
    // An equal static split protects the light tenant from the heavy one (web 57.0 / 63.0 µs;
    // over 5 seeds at most 57.2 against at least 62.3).
    tenant_claim("example", "web", "static-equal", "shared", 0.95),
    // LAMA's QoS partition: APP2's 70% target serves it better than the joint miss-minimising
    // partition does (340.7 / 367.0 µs; over 5 seeds 21-25 the ratio is 0.922-0.934), and the
    // rest of the memory still beats memcached's default allocation (264.8 / 297.0 µs; 0.860-0.910).
    tenant_claim("lama_qos", "app2", "lama-qos-app2", "lama-joint", 0.95),
    claim("lama_qos", "lama-qos-app2", "memcached", 0.95),
];

/// How far (relative, on the headline metric) a controller that only partitions may beat the
/// oracle: the oracle plans with exact LRU curves of the whole run, the engine evicts by sampled
/// LRU, so ties come out a little either way.
const ORACLE_NOISE: f64 = 0.01;

/// Controllers that only partition memory (same policy, same K as the oracle's run).
const PARTITIONERS: &[&str] = &[
    "shared",
    "static",
    "mpart",
    "predis",
    "memshare",
    "memsweeper-max",
    "memsweeper-fair",
];

/// The claims of `r` that fail, and the oracle bound.
fn claim_failures(exp: &Experiment, r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let value = |label: &str, on: Scope| {
        let run = r.runs.iter().find(|x| x.label == label)?;
        match on {
            Scope::Overall => Some(r.headline(run)),
            Scope::Tenant(t) => run
                .tenants
                .iter()
                .find(|x| x.name == t)
                .map(|x| r.headline_of(x)),
            Scope::Steady(w) => run
                .steady
                .iter()
                .find(|x| x.name == w)
                .map(|x| r.headline_of(&x.overall)),
            Scope::Worst => run
                .tenants
                .iter()
                .map(|x| r.headline_of(x))
                .max_by(f64::total_cmp),
        }
    };
    for c in CLAIMS.iter().filter(|c| c.exp == exp.name) {
        let on = match c.on {
            Scope::Overall => String::new(),
            Scope::Tenant(t) => format!(" (tenant {t})"),
            Scope::Steady(w) => format!(" (steady window {w})"),
            Scope::Worst => " (worst tenant)".to_string(),
        };
        match (value(c.better, c.on), value(c.worse, c.on)) {
            (Some(b), Some(w)) if b <= c.ratio * w => {}
            (Some(b), Some(w)) => out.push(format!(
                "{}: claim {} <= {} x {}{on} fails: {b:.4} vs {w:.4} ({:.3})",
                exp.name,
                c.better,
                c.ratio,
                c.worse,
                b / w
            )),
            _ => out.push(format!(
                "{}: claim {} vs {}{on}: no such run",
                exp.name, c.better, c.worse
            )),
        }
    }
    out.extend(oracle_failures(exp, r));
    out
}

/// Whether controller `c` only partitions (the oracle's policy and K).
fn partitions_only(c: &ControllerRun) -> bool {
    let same = c.policy.is_none() && c.samples.is_none() && c.evpool_size.is_none();
    same && PARTITIONERS.contains(&c.name.as_str())
}

/// The runs of `r` that only partition and beat its oracle by more than [`ORACLE_NOISE`].
fn oracle_failures(exp: &Experiment, r: &Report) -> Vec<String> {
    let Some(o) = r
        .runs
        .iter()
        .find(|x| x.label == "oracle")
        .map(|x| r.headline(x))
    else {
        return Vec::new();
    };
    r.runs
        .iter()
        .zip(&exp.controllers)
        .filter(|(run, c)| partitions_only(c) && r.headline(run) < o * (1.0 - ORACLE_NOISE))
        .map(|(run, _)| {
            format!(
                "{} seed {}: {} beats the oracle: {:.4} vs {o:.4}",
                exp.name,
                exp.seed,
                run.label,
                r.headline(run)
            )
        })
        .collect()
}

/// `LOCUS_REPLACE=label,…`: those controllers run as `shared` (no settings, no dump/load).
fn replaced(mut exp: Experiment, labels: &[String]) -> Experiment {
    for c in &mut exp.controllers {
        if labels.contains(&c.label) {
            *c = ControllerRun {
                label: c.label.clone(),
                name: "shared".into(),
                settings: Vec::new(),
                policy: None,
                samples: None,
                evpool_size: None,
                dump_load: Some(locus_control::DumpLoadMode::Never),
                tier: c.tier,
                fast_partition: c.fast_partition,
            };
        }
    }
    exp
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "three minutes in a debug build: scripts/test.sh runs it in release (cargo test --release -p locus-sim --test golden)"
)]
fn experiments_match_their_golden_numbers() {
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("LOCUS_BLESS").is_some_and(|v| v == "1");
    let mut files = experiment_files();
    if let Ok(only) = std::env::var("LOCUS_GOLDEN") {
        let names: Vec<&str> = only.split(',').map(str::trim).collect();
        files.retain(|p| {
            p.file_stem()
                .and_then(|s| s.to_str())
                .is_some_and(|s| names.contains(&s))
        });
        assert!(!files.is_empty(), "LOCUS_GOLDEN={only}: no such experiment");
    }
    let replace: Vec<String> = std::env::var("LOCUS_REPLACE")
        .map(|v| v.split(',').map(|x| x.trim().to_string()).collect())
        .unwrap_or_default();
    let mut problems = Vec::new();
    for file in &files {
        if !shared_traces_present(file) {
            continue;
        }
        let exp = match Experiment::load(file) {
            Ok(e) => e,
            Err(e) => {
                problems.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        if exp.golden.is_none() {
            problems.push(format!(
                "{}: no [golden] table (scale and/or requests for the scaled-down run)",
                file.display()
            ));
            continue;
        }
        let scaled = replaced(exp.golden_scaled(), &replace);
        let started = std::time::Instant::now();
        let report = match simulate(&scaled, &Options::default(), &|_, _| {}) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        eprintln!(
            "golden {}: {} runs in {:.1} s, ordering {:?}",
            exp.name,
            report.runs.len(),
            started.elapsed().as_secs_f64(),
            report.ordering
        );
        for run in &report.runs {
            let tenants: Vec<String> = run
                .tenants
                .iter()
                .map(|t| format!("{} {:.4}", t.name, report.headline_of(t)))
                .collect();
            eprintln!(
                "  {} {:.4} [{}]",
                run.label,
                report.headline(run),
                tenants.join(", ")
            );
        }
        problems.extend(claim_failures(&scaled, &report));
        if !replace.is_empty() {
            continue;
        }
        let got = summary(&report);
        let path = golden_dir.join(format!("{}.json", exp.name));
        if bless {
            std::fs::create_dir_all(&golden_dir).unwrap();
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&path, text).unwrap();
            eprintln!("blessed {}", path.display());
            continue;
        }
        let want: Value = match std::fs::read_to_string(&path) {
            Ok(t) => serde_json::from_str(&t).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            Err(_) => {
                problems.push(format!(
                    "{}: no golden file {} (run with LOCUS_BLESS=1 and review it)",
                    file.display(),
                    path.display()
                ));
                continue;
            }
        };
        let mut diff = Vec::new();
        differences(&want, &got, &exp.name, &mut diff);
        if !diff.is_empty() {
            problems.push(format!(
                "{} differs from {}:\n    {}",
                file.display(),
                path.display(),
                diff.join("\n    ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "golden check failed (LOCUS_BLESS=1 regenerates after review):\n  {}",
        problems.join("\n  ")
    );
}

/// Seeds the oracle's bound is checked over: the experiment's own and the next ones.
const ORACLE_SEEDS: u64 = 5;

/// Acceptance 4 of issue 16: on every experiment with an `oracle`, over [`ORACLE_SEEDS`] seeds
/// at the golden scale, no controller that only partitions beats it by more than
/// [`ORACLE_NOISE`] (the snapshot test checks the first seed only). Prints, per seed, the best
/// partitioner's headline metric as a share of the oracle's.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "minutes in a debug build: scripts/test.sh runs it in release (cargo test --release -p locus-sim --test golden)"
)]
fn the_oracle_is_never_beaten_by_a_partitioner_over_seeds() {
    let files = experiment_files();
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in &files {
        if !shared_traces_present(file) {
            continue;
        }
        let Ok(exp) = Experiment::load(file) else {
            continue; // the snapshot test reports it
        };
        if exp.golden.is_none() || !exp.controllers.iter().any(|c| c.label == "oracle") {
            continue;
        }
        let mut exp = exp.golden_scaled();
        exp.controllers
            .retain(|c| c.label == "oracle" || partitions_only(c));
        if let Some(b) = &exp.baseline
            && !exp.controllers.iter().any(|c| &c.label == b)
        {
            exp.baseline = None;
        }
        for i in 0..ORACLE_SEEDS {
            let mut e = exp.clone();
            e.seed = exp.seed.wrapping_add(i);
            let r = match simulate(&e, &Options::default(), &|_, _| {}) {
                Ok(r) => r,
                Err(err) => {
                    problems.push(format!("{} seed {}: {err}", e.name, e.seed));
                    continue;
                }
            };
            let o = r
                .runs
                .iter()
                .find(|x| x.label == "oracle")
                .map(|x| r.headline(x));
            let best = r
                .runs
                .iter()
                .filter(|x| x.label != "oracle")
                .map(|x| (r.headline(x), x.label.as_str()))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let (Some(o), Some((b, label))) = (o, best) {
                eprintln!(
                    "oracle bound {} seed {}: best partitioner {label} at {:.4} of the oracle",
                    e.name,
                    e.seed,
                    b / o
                );
            }
            problems.extend(oracle_failures(&e, &r));
            checked += 1;
        }
    }
    assert!(checked > 0, "no experiment with an oracle");
    assert!(
        problems.is_empty(),
        "the oracle is beaten:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn differences_name_the_changed_value() {
    let a = json!({"hit_ratio": {"shared": {"a": 0.5}}, "ordering": ["x", "y"]});
    let b = json!({"hit_ratio": {"shared": {"a": 0.6}}, "ordering": ["y", "x"]});
    let mut d = Vec::new();
    differences(&a, &b, "e", &mut d);
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(
        d[0].starts_with("e.hit_ratio.shared.a: golden 0.5, now 0.6"),
        "{d:?}"
    );
    let mut none = Vec::new();
    differences(&a, &a, "e", &mut none);
    assert!(none.is_empty());
}
