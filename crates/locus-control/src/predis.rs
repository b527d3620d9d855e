//! The `predis` controller: pRedis (Pan, Luo, Wang, Wang, SoCC'19), penalty- and locality-aware
//! memory allocation.
//!
//! Per pool an EAET profiler ([`locus_mrc::Eaet`], byte clock, SET size changes and DEL by the
//! paper's Eq. 5, reference sampling; docs/models.md §4) builds the pool's byte-capacity MRC of GET
//! requests. At every decision (pRedis section 3.3):
//!
//! ```text
//!   EAET_i ──mrc(bytes)──► ×(item bytes/page of pool i) ──► mr_i[pages]
//!   p_i = pool penalty (operator hint, else measured GET miss → SET gap, else default)
//!   N_i = GETs since the previous decision
//!   DP (Eq. 11): min Σ mr_i(M_i)·p_i·N_i  subject to Σ M_i ≤ M, granularity G = step pages
//! ```
//!
//! Decisions start once memory is contended (full, or some pool evicting) and every pool has `min_samples` expected samples
//! (pRedis profiles the first 10% of its run before reallocating), or the pools short of them
//! carry under 5% of the accesses (a sparse class does not hold back the others); until then the
//! `initial` allocation, if any, is in force.
//!
//! **Sampling.** pRedis samples 1% of the references of every class. A class of a few dozen keys
//! then yields a handful of reuse times per million requests, and its curve is noise. By default
//! each pool's EAET follows every reference while its pending samples fit `sample_keys` (16 Ki)
//! and halves its rate as they outgrow it, but never below the paper's 1% (`min_rate`): small
//! pools are profiled whole, large ones at least as densely as in the paper. `rate = 0.01` with
//! the default `min_rate` is the paper's fixed 1% (every pRedis table before issue 29 was measured
//! so; the experiment files say it where they measure predis).
//!
//! The engine converges to the targets by eviction (a pool above its target evicts its own
//! items; a pool below takes free pages or pages of pools above theirs), which is pRedis's
//! "check whether the chosen key belongs to a class whose used memory is larger than suggested".
//!
//! **Penalty classes.** In pRedis a pool is a penalty class: keys are put in classes by a user hint
//! or automatically by measured penalty (16 exponential ranges, [`penalty_class`]). Here the user
//! hints are tenants (one pool each, with a `penalty_us` hint or a measured penalty), and
//! pRedis(auto) is a tenant with per-key classes (`penalty_classes = N` in `locus serve`,
//! [`locus_engine::Engine::set_penalty_classes`]): the engine splits that tenant's keys over up to
//! N class pools by each key's measured GET miss → SET gap, and this controller sees every class
//! pool as a pool (its own EAET curve, access count, measured penalty and target). The simulator
//! still maps penalty classes to tenants (with [`penalty_class`] for the automatic ranges).
//!
//! How the data path feeds EAET: a GET hit is a read of its size; a GET miss is a read of the
//! pool's mean item size (the size is unknown until the fill), and the demand-fill SET that
//! follows is an update of that key (docs/models.md §4: equivalent, within one operation, to pRedis
//! counting the SET-back as the GET); other SETs are writes; DELs remove their bytes.
//!
//! Not done (pRedis section 4): the auto dump/load of periodic classes.

use locus_alloc::Objective;
use locus_mrc::{Eaet, Metric, Op, Profiler, Unit};

use crate::checks::{bad_setting, check_common, check_initial, check_min_gain, read_pages_list};
use crate::partition::{Contention, MeanSize, Rates, bounds, initial_decision, planned_decision};
use crate::plan::{PlanOptions, PoolCurve, pages_record};
use locus_engine::control::{
    Access, AccessKind, ControlError, ControlView, Controller, Decision, Settings,
};
pub use locus_engine::control::{PENALTY_CLASSES, penalty_class, penalty_class_range};

/// Share of the accesses the pools still short of `min_samples` may carry without holding back
/// a decision.
const SPARSE_SHARE: f64 = 0.05;

/// Default `sample_keys` of `predis`: pending EAET samples per pool (as mPart's AET budget).
pub const PREDIS_SAMPLE_KEYS: u64 = 16_384;
/// pRedis's fixed sampling rate (section 3.2), `predis`'s default `min_rate`.
pub const PREDIS_PAPER_RATE: f64 = 0.01;

/// Points kept per curve in the decision records.
const RECORD_POINTS: usize = 64;
/// Settings of the `predis` controller (defaults in [`PredisConfig::default`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PredisConfig {
    /// Highest EAET reference-sampling rate, in `(0, 1]` (setting `rate`, default 1: a pool
    /// whose pending samples fit `sample_keys` is followed whole); with `sample_keys = 0` the
    /// fixed rate (the paper's is 0.01).
    pub rate: f64,
    /// Most pending EAET samples per pool (setting `sample_keys`, default [`PREDIS_SAMPLE_KEYS`];
    /// 0 = none: the fixed `rate`, as the paper). Above 0 a pool's rate starts at `rate` and
    /// halves as its pending samples outgrow this ([`locus_mrc::Eaet::with_budget`]; ~40 B
    /// each), but never below `min_rate`: a pool of fewer keys is followed whole, a larger one
    /// through about this many, and a huge one at no less than `min_rate`.
    pub sample_keys: u64,
    /// Lowest rate the budget may bring a pool to (setting `min_rate`, default 0.01, the paper's
    /// fixed 1%: no pool is sampled more sparsely than pRedis samples every pool; a `rate` below
    /// it is a fixed rate).
    pub min_rate: f64,
    /// Capacity unit of the curves (setting `unit`, `bytes` (default, EAET's byte clock) or
    /// `objects` (every item counts 1: AET with SET/DEL, for fixed-size items)).
    pub unit: Unit,
    /// DP granularity `G` in pages (setting `step`, default 0 = automatic, at most 1024 units).
    pub step: u64,
    /// Weight the histograms keep after each decision, in `[0, 1]` (setting `decay`, default 1 =
    /// the whole run). Below 1 the curves follow phase changes, but samples still waiting for
    /// their next reuse count as cold at full weight, so short intervals inflate the tail of the
    /// curve (measured in the two-Zipf test: 0.46 instead of 0.09 at 160 pages with decay 0.5
    /// and 10 k accesses per pool per interval).
    pub decay: f64,
    /// Decisions that only profile before the first reallocation (setting `warmup`, default 0;
    /// pRedis profiles the first 10% of its run).
    pub warmup: u64,
    /// Penalty in µs for a pool with neither a hint nor a measurement (setting
    /// `default_penalty_us`, default 0 = the mean of the pools that have one, or 1).
    pub default_penalty_us: f64,
    /// Expected sampled operations a pool with traffic needs before its curve is used (setting
    /// `min_samples`, default 200).
    pub min_samples: u64,
    /// Largest change per decision as a share of `max(current, pages_total / pools)` (setting
    /// `max_change`, default 0 = unbounded, as pRedis).
    pub max_change: f64,
    /// Targets (pages, pool order) in force until the curves are usable (setting `initial`,
    /// default none: free competition).
    pub initial: Vec<u64>,
    /// The same as shares of `pages_total` (setting `initial_shares`, e.g. `0.3,0.7`; a sum
    /// above 1 is scaled down by the engine); exclusive with `initial`. Shares scale with the
    /// memory, pages do not.
    pub initial_shares: Vec<f64>,
    /// Keep the targets in force when the plan improves the total miss latency by less than
    /// this share (setting `min_gain`, default 0.005; 0 = always take the plan; not in the paper).
    pub min_gain: f64,
    /// Seed of the samplers (setting `seed`, default 1).
    pub seed: u64,
}

impl Default for PredisConfig {
    fn default() -> Self {
        PredisConfig {
            rate: 1.0,
            sample_keys: PREDIS_SAMPLE_KEYS,
            min_rate: PREDIS_PAPER_RATE,
            unit: Unit::Bytes,
            step: 0,
            decay: 1.0,
            warmup: 0,
            default_penalty_us: 0.0,
            min_samples: 200,
            max_change: 0.0,
            initial: Vec::new(),
            initial_shares: Vec::new(),
            min_gain: 0.005,
            seed: 1,
        }
    }
}

impl PredisConfig {
    /// Reads the settings (see the field docs for keys and defaults).
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] for a value out of range, [`ControlError::UnknownSetting`]
    /// for a key it does not know.
    pub fn from_settings(mut s: Settings) -> Result<Self, ControlError> {
        let d = PredisConfig::default();
        let cfg = PredisConfig {
            rate: s.f64("rate", d.rate)?,
            sample_keys: s.u64("sample_keys", d.sample_keys)?,
            min_rate: s.f64("min_rate", d.min_rate)?,
            unit: match s.string("unit", "bytes")?.as_str() {
                "bytes" => Unit::Bytes,
                "objects" => Unit::Objects,
                other => {
                    return Err(bad_setting(
                        "predis",
                        "unit",
                        other.to_string(),
                        "bytes or objects",
                    ));
                }
            },
            step: s.u64("step", d.step)?,
            decay: s.f64("decay", d.decay)?,
            warmup: s.u64("warmup", d.warmup)?,
            default_penalty_us: s.f64("default_penalty_us", d.default_penalty_us)?,
            min_samples: s.u64("min_samples", d.min_samples)?,
            max_change: s.f64("max_change", d.max_change)?,
            initial: read_pages_list(&mut s, "predis", "initial")?,
            initial_shares: s.f64_list("initial_shares", &[])?,
            min_gain: s.f64("min_gain", d.min_gain)?,
            seed: s.u64("seed", d.seed)?,
        };
        s.finish()?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] naming the first bad key.
    pub fn validate(&self) -> Result<(), ControlError> {
        check_common("predis", self.rate, self.decay, self.max_change)?;
        check_initial("predis", &self.initial, &self.initial_shares)?;
        check_min_gain("predis", self.min_gain)?;
        if !(self.min_rate.is_finite() && (0.0..=1.0).contains(&self.min_rate)) {
            return Err(bad_setting(
                "predis",
                "min_rate",
                self.min_rate.to_string(),
                "a rate in [0, 1]",
            ));
        }
        if !(self.default_penalty_us.is_finite() && self.default_penalty_us >= 0.0) {
            return Err(bad_setting(
                "predis",
                "default_penalty_us",
                self.default_penalty_us.to_string(),
                "a penalty >= 0 µs",
            ));
        }
        Ok(())
    }
}

struct PoolModel {
    eaet: Eaet,
    sizes: MeanSize,
    ops: u64,
}

/// The pRedis controller (see the module documentation).
pub struct Predis {
    cfg: PredisConfig,
    pools: Vec<PoolModel>,
    rates: Rates,
    contention: Contention,
}

impl std::fmt::Debug for Predis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Predis")
            .field("cfg", &self.cfg)
            .field("pools", &self.pools.len())
            .finish()
    }
}

impl Predis {
    /// A controller with `cfg`.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] if `cfg` is out of range.
    pub fn new(cfg: PredisConfig) -> Result<Self, ControlError> {
        cfg.validate()?;
        Ok(Predis {
            cfg,
            pools: Vec::new(),
            rates: Rates::default(),
            contention: Contention::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &PredisConfig {
        &self.cfg
    }

    fn pool(&mut self, i: usize) -> &mut PoolModel {
        while self.pools.len() <= i {
            let seed =
                self.cfg.seed ^ (self.pools.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            self.pools.push(PoolModel {
                eaet: match self.cfg.sample_keys {
                    0 => Eaet::new(self.cfg.rate, self.cfg.unit, Metric::Requests, seed),
                    b => Eaet::with_budget(
                        self.cfg.rate,
                        b as usize,
                        self.cfg.unit,
                        Metric::Requests,
                        seed,
                    )
                    .map(|mut e| {
                        e.set_min_rate(self.cfg.min_rate);
                        e
                    }),
                }
                .expect("rate checked by PredisConfig::validate, budget above 0"),
                sizes: MeanSize::default(),
                ops: 0,
            });
        }
        &mut self.pools[i]
    }

    /// The penalty used for each pool: its own, else `default_penalty_us`, else the mean of the
    /// known ones, else 1 µs.
    fn penalties(&self, view: &ControlView<'_>) -> Vec<f64> {
        let known: Vec<f64> = view
            .pools
            .iter()
            .map(|p| p.penalty_us)
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        let fallback = if self.cfg.default_penalty_us > 0.0 {
            self.cfg.default_penalty_us
        } else if known.is_empty() {
            1.0
        } else {
            known.iter().sum::<f64>() / known.len() as f64
        };
        view.pools
            .iter()
            .map(|p| {
                if p.penalty_us.is_finite() && p.penalty_us > 0.0 {
                    p.penalty_us
                } else {
                    fallback
                }
            })
            .collect()
    }
}

impl Controller for Predis {
    fn name(&self) -> &'static str {
        "predis"
    }

    fn on_access(&mut self, a: &Access) {
        let m = self.pool(a.pool.0 as usize);
        let h = a.key_hash;
        m.ops += 1;
        match a.kind {
            AccessKind::GetHit => {
                m.sizes.add(a.size);
                m.eaet.access(h, a.size, Op::Get);
            }
            AccessKind::GetMiss => {
                let s = m.sizes.get().map_or(a.size.max(1), |x| x.round() as u32);
                m.eaet.access(h, s, Op::Get);
            }
            AccessKind::Set => {
                m.sizes.add(a.size);
                m.eaet.access(h, a.size, Op::Set);
            }
            AccessKind::Delete => m.eaet.access(h, a.size, Op::Del),
        }
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let n = view.pools.len();
        if n == 0 {
            return Decision::default();
        }
        self.pool(n - 1);
        let rates = self.rates.window(view);
        // Every pool has its samples, or the pools still short of them carry under
        // SPARSE_SHARE of the accesses: a class a few stray keys fall into (a penalty range the
        // machine's own delays reach now and then) must not hold back the others' plan. Its
        // young curve, mostly cold misses, earns it little memory until its samples come.
        let short_ops: u64 = self.pools[..n]
            .iter()
            .filter(|m| m.ops > 0 && m.eaet.rate() * (m.ops as f64) < self.cfg.min_samples as f64)
            .map(|m| m.ops)
            .sum();
        let all_ops: u64 = self.pools[..n].iter().map(|m| m.ops).sum();
        let ready = short_ops == 0 || (short_ops as f64) < SPARSE_SHARE * all_ops as f64;
        let contended = self.contention.update(view);
        if view.requests == 0 || view.interval < self.cfg.warmup || !ready || !contended {
            return initial_decision(
                &self.cfg.initial,
                &self.cfg.initial_shares,
                view.pages_total,
                n,
                "predis.profiling",
            );
        }
        let penalties = self.penalties(view);
        let total = view.pages_total;
        let mut curves = Vec::with_capacity(n);
        let mut records = Vec::with_capacity(n);
        let mut notes = Vec::new();
        for (i, p) in view.pools.iter().enumerate() {
            let m = &self.pools[i];
            let item = m.sizes.get().unwrap_or(100.0);
            // Capacity of a page: measured in the pool, or (not placed yet) chunks of the mean
            // size plus the 16-byte header.
            let per_page = match self.cfg.unit {
                Unit::Bytes if p.pages > 0 && p.item_bytes > 0 => {
                    p.item_bytes as f64 / p.pages as f64
                }
                Unit::Bytes => view.page_size as f64 * item / (item + 16.0),
                Unit::Objects if p.pages > 0 && p.items > 0 => p.items as f64 / p.pages as f64,
                Unit::Objects => (view.page_size as f64 / (item + 16.0)).max(1.0),
            };
            let caps: Vec<f64> = (1..=total).map(|q| q as f64 * per_page).collect();
            let mut mr = vec![1.0];
            if m.ops > 0
                && let Ok(c) = m.eaet.mrc(&caps)
            {
                mr.extend(c.points().iter().map(|x| x.1));
            }
            mr.resize(total as usize + 1, 1.0);
            notes.push((format!("pool{i}.penalty_us"), penalties[i]));
            notes.push((format!("pool{i}.{}_per_page", self.cfg.unit), per_page));
            records.push(pages_record(
                i,
                format!(
                    "eaet r={} {} (miss ratio by pages)",
                    m.eaet.rate(),
                    self.cfg.unit
                ),
                &mr,
                RECORD_POINTS,
            ));
            curves.push(PoolCurve {
                miss_ratio: mr,
                rate: rates[i],
                penalty_us: penalties[i],
            });
        }
        for m in &mut self.pools {
            // decay ∈ [0, 1] is checked by validate(), so this cannot fail.
            let _ = m.eaet.decay(self.cfg.decay);
        }
        let (floors, caps) = bounds(view, self.cfg.max_change);
        let opts = PlanOptions {
            pages_total: total,
            step: self.cfg.step,
            objective: Objective::MissLatency,
            floors,
            caps,
        };
        planned_decision(
            "predis",
            &curves,
            &opts,
            view,
            self.cfg.min_gain,
            records,
            notes,
        )
    }
}

/// Builds the controller from its settings.
pub(crate) fn build(s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    Ok(Box::new(Predis::new(PredisConfig::from_settings(s)?)?))
}

#[cfg(test)]
mod tests {
    use locus_common::Rng;

    use super::*;
    use crate::build as build_named;
    use crate::testkit::demand::{Zipf, engine, get_or_fill};
    use locus_engine::control::{ControlConfig, Interval};

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        Settings::new(
            "predis",
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        )
    }

    #[test]
    fn settings_defaults_and_errors() {
        assert_eq!(
            PredisConfig::from_settings(settings(&[])).unwrap(),
            PredisConfig::default()
        );
        for (k, v) in [
            ("rate", "0"),
            ("decay", "-0.5"),
            ("default_penalty_us", "-1"),
            ("max_change", "-1"),
            ("initial", "x"),
        ] {
            assert!(
                matches!(
                    PredisConfig::from_settings(settings(&[(k, v)])),
                    Err(ControlError::BadSetting { ref key, .. }) if key == k
                ),
                "{k}={v}"
            );
        }
        assert!(matches!(
            build(settings(&[("penalty", "1")])),
            Err(ControlError::UnknownSetting { .. })
        ));
    }

    /// Runs two tenants with the same Zipf(0.9) stream over 6000 keys each, in 100 pages (~3000
    /// items), miss penalties 100 µs and 1000 µs measured by the engine (GET miss → SET gap).
    /// Returns (final targets, Σ miss penalty in the second half per tenant, misses per tenant).
    fn two_penalties(ctl: &str) -> (Vec<Option<u64>>, [f64; 2], [u64; 2]) {
        two_penalties_with(ctl, &[("rate", "0.02")])
    }

    /// [`two_penalties`] with these `predis` settings.
    fn two_penalties_with(
        ctl: &str,
        predis: &[(&str, &str)],
    ) -> (Vec<Option<u64>>, [f64; 2], [u64; 2]) {
        let (t, cost, misses) = run_tenants(ctl, predis, &[100, 1000], |i| (i % 2) as usize);
        (t, [cost[0], cost[1]], [misses[0], misses[1]])
    }

    /// 300,000 requests of one Zipf(0.9) stream over 6000 keys a tenant, request `i` going to
    /// tenant `pick(i)`, whose misses cost `pen` µs (measured by the engine: GET miss → SET gap);
    /// 100 pages, a decision every 20,000 requests. Returns (final targets, Σ miss penalty in
    /// the second half per tenant, misses there per tenant).
    fn run_tenants(
        ctl: &str,
        predis: &[(&str, &str)],
        pen: &[u64],
        pick: impl Fn(u64) -> usize,
    ) -> (Vec<Option<u64>>, Vec<f64>, Vec<u64>) {
        const N: u64 = 300_000;
        let (mut e, ts, clock) = engine(100, &["fast", "slow", "sparse"][..pen.len()]);
        let s = if ctl == "predis" {
            settings(predis)
        } else {
            Settings::new(ctl, Vec::new())
        };
        e.set_controller(
            build_named(ctl, s).unwrap(),
            ControlConfig {
                interval: Interval::Requests(20_000),
                max_moves: 64,
                offload: false,
            },
        );
        let z = Zipf::new(6000, 0.9);
        let mut rng = Rng::new(5);
        let (mut cost, mut misses) = (vec![0.0; pen.len()], vec![0u64; pen.len()]);
        for i in 0..N {
            let w = pick(i);
            let k = z.sample(&mut rng);
            let hit = get_or_fill(
                &mut e,
                &clock,
                ts[w],
                format!("{w}:{k}").as_bytes(),
                100,
                pen[w],
            );
            if !hit && i >= N / 2 {
                cost[w] += pen[w] as f64;
                misses[w] += 1;
            }
        }
        (e.targets(), cost, misses)
    }

    #[test]
    fn more_memory_for_the_high_penalty_pool() {
        let (t, cost, misses) = two_penalties("predis");
        let (_, shared_cost, shared_misses) = two_penalties("shared");
        let total = |c: [f64; 2]| c[0] + c[1];
        eprintln!(
            "predis targets {t:?} miss penalty {:.0} µs (misses {misses:?}); shared {:.0} µs \
             (misses {shared_misses:?})",
            total(cost),
            total(shared_cost)
        );
        let (fast, slow) = (t[0].unwrap(), t[1].unwrap());
        assert!(slow > fast + 20, "targets {t:?}");
        assert!(
            total(cost) < 0.9 * total(shared_cost),
            "predis {cost:?} vs shared {shared_cost:?}"
        );
    }

    #[test]
    fn a_sparse_pool_does_not_hold_back_the_plan() {
        // The two tenants of `two_penalties` and a third that sees one request in 250: at rate
        // 0.02 its 1,200 accesses never make `min_samples` (200) expected samples. It carries
        // 0.4% of the accesses, so the others' plan goes ahead: the dear tenant gets more.
        let pick = |i: u64| {
            if i.is_multiple_of(250) {
                2
            } else {
                (i % 2) as usize
            }
        };
        let (t, _, _) = run_tenants("predis", &[("rate", "0.02")], &[100, 1000, 1000], pick);
        let (fast, slow) = (t[0].expect("a plan"), t[1].expect("a plan"));
        assert!(slow > fast + 20, "targets {t:?}");
    }

    /// The same with a budget of pending samples instead of a fixed rate (`sample_keys`, rate
    /// from 1): each pool's 6000 keys outgrow a budget of 500, the rate falls, and the decision
    /// is the same kind as at the paper's fixed rate.
    #[test]
    fn a_sample_budget_reaches_the_same_decision() {
        let (t, cost, _) = two_penalties_with("predis", &[("rate", "1"), ("sample_keys", "500")]);
        let (_, shared_cost, _) = two_penalties("shared");
        let (fast, slow) = (t[0].unwrap(), t[1].unwrap());
        assert!(slow > fast + 20, "targets {t:?}");
        assert!(
            cost[0] + cost[1] < 0.9 * (shared_cost[0] + shared_cost[1]),
            "predis {cost:?} vs shared {shared_cost:?}"
        );
        let cfg = PredisConfig::from_settings(settings(&[("rate", "1"), ("sample_keys", "500")]))
            .unwrap();
        let mut p = Predis::new(cfg).unwrap();
        for i in 0..20_000u64 {
            p.on_access(&Access {
                tenant: locus_engine::TenantId(0),
                pool: locus_engine::PoolId(0),
                kind: AccessKind::GetHit,
                key_hash: locus_common::hash_key(format!("k{}", i % 6000).as_bytes()),
                size: 100,
                class: Some(locus_engine::ClassId(0)),
                now_us: i,
            });
        }
        let m = &p.pools[0];
        assert!(
            m.eaet.pending() <= 500 && m.eaet.rate() < 1.0,
            "{}",
            m.eaet.rate()
        );
    }

    /// pRedis section 2.1 in the engine: one item per page (3.9 KB values in 4 KiB pages), 5
    /// pages; class 1 cycles over 2 keys (10 ms penalty), class 2 over 3 keys (200 ms), class 3
    /// never repeats (200 ms), at rates 5:3:2. The optimum is (2, 3, 0) pages with a mean
    /// latency of 41 ms (1 ms hits) against LRU's 101 ms.
    fn three_classes(ctl: &str) -> (Vec<Option<u64>>, f64) {
        const N: u64 = 20_000;
        let (mut e, ts, clock) = engine(5, &["c1", "c2", "c3"]);
        let s = if ctl == "predis" {
            settings(&[
                ("rate", "1"),
                ("unit", "objects"),
                ("step", "1"),
                ("min_samples", "50"),
            ])
        } else {
            Settings::new(ctl, Vec::new())
        };
        e.set_controller(
            build_named(ctl, s).unwrap(),
            ControlConfig {
                interval: Interval::Requests(1000),
                max_moves: 64,
                offload: false,
            },
        );
        let pattern = [0usize, 1, 0, 1, 0, 1, 0, 2, 0, 2];
        let pen = [10_000u64, 200_000, 200_000];
        let (mut next, mut lat, mut n) = ([0u64; 3], 0.0, 0u64);
        let mut late_misses = [0u64; 3];
        for i in 0..N {
            let c = pattern[(i % 10) as usize];
            let key = match c {
                0 => format!("1:{}", next[0] % 2),
                1 => format!("2:{}", next[1] % 3),
                _ => format!("3:{}", next[2]),
            };
            next[c] += 1;
            let hit = get_or_fill(&mut e, &clock, ts[c], key.as_bytes(), 3900, pen[c]);
            if i >= N / 2 {
                lat += 1000.0 + if hit { 0.0 } else { pen[c] as f64 };
                n += 1;
                if !hit {
                    late_misses[c] += 1;
                }
            }
        }
        eprintln!("{ctl}: second-half misses per class {late_misses:?} of {n}");
        (e.targets(), lat / n as f64 / 1000.0)
    }

    #[test]
    fn three_class_worked_example() {
        let (t, ms) = three_classes("predis");
        let (_, shared_ms) = three_classes("shared");
        eprintln!("predis targets {t:?} mean latency {ms:.1} ms; shared {shared_ms:.1} ms");
        assert_eq!(t, vec![Some(2), Some(3), Some(0)]);
        assert!((ms - 41.0).abs() < 0.5, "{ms}");
        assert!(shared_ms > 80.0, "{shared_ms}");
    }

    /// The worked example's third class gets no page: its writes are taken and dropped at once
    /// (counted as evictions), never refused with OOM, and the other classes keep their pages.
    #[test]
    fn a_class_given_no_page_takes_writes_and_drops_them() {
        let (mut e, ts, clock) = engine(5, &["c1", "c2", "c3"]);
        e.set_controller(
            build_named(
                "predis",
                settings(&[
                    ("rate", "1"),
                    ("unit", "objects"),
                    ("step", "1"),
                    ("min_samples", "50"),
                ]),
            )
            .unwrap(),
            ControlConfig {
                interval: Interval::Requests(1000),
                max_moves: 64,
                offload: false,
            },
        );
        let pattern = [0usize, 1, 0, 1, 0, 1, 0, 2, 0, 2];
        let pen = [10_000u64, 200_000, 200_000];
        let mut next = [0u64; 3];
        for i in 0..20_000u64 {
            let c = pattern[(i % 10) as usize];
            let key = match c {
                0 => format!("1:{}", next[0] % 2),
                1 => format!("2:{}", next[1] % 3),
                _ => format!("3:{}", next[2]),
            };
            next[c] += 1;
            get_or_fill(&mut e, &clock, ts[c], key.as_bytes(), 3900, pen[c]);
        }
        assert_eq!(e.targets()[2], Some(0));
        let before = e.tenant_stats(ts[2]).evictions;
        for i in 0..10u64 {
            let k = format!("3:new{i}");
            assert_eq!(
                e.set(
                    ts[2],
                    k.as_bytes(),
                    &[7u8; 3900],
                    locus_engine::SetOptions::default()
                ),
                Ok(true),
                "a write to the class with no page is taken"
            );
        }
        assert!(e.tenant_stats(ts[2]).evictions >= before + 10);
        assert_eq!(e.tenant_stats(ts[2]).items, 0);
        assert!(e.tenant_stats(ts[0]).items > 0 && e.tenant_stats(ts[1]).items > 0);
    }

    #[test]
    fn penalty_classes_follow_the_papers_ranges() {
        assert_eq!(penalty_class(0.5), 0);
        assert_eq!(penalty_class(9.9), 0);
        assert_eq!(penalty_class(10.0), 1);
        assert_eq!(penalty_class(29.0), 1);
        assert_eq!(penalty_class(30.0), 2);
        assert_eq!(penalty_class(120.0), 3);
        assert_eq!(penalty_class(1000.0), 6);
        assert_eq!(penalty_class(327_669.0), 14);
        assert_eq!(penalty_class(327_670.0), 15);
        assert_eq!(penalty_class(1e9), 15);
        assert_eq!(penalty_class_range(0), (1.0, 10.0));
        assert_eq!(penalty_class_range(2), (30.0, 70.0));
        assert_eq!(penalty_class_range(15), (327_670.0, 655_350.0));
        for c in 0..PENALTY_CLASSES {
            let (lo, hi) = penalty_class_range(c);
            assert_eq!(penalty_class(lo.max(1.0)), c);
            assert_eq!(penalty_class(hi - 0.5), c);
        }
    }
}
