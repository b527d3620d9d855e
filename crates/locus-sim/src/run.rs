//! One run: one controller on one engine, fed the experiment's request stream.
//!
//! ```text
//!  Item ─► clock = max(clock, start + time) ─► GET ─ hit ─► clock += hit time
//!                                               └── miss ─► clock += penalty ─► SET (the engine's
//!                                                           GET miss → SET gap is the penalty)
//!  SET ─► SET      DELETE ─► DEL      after each request: new decisions → IntervalRow
//! ```
//!
//! Keys are the request's 64-bit id (8 bytes, little endian) padded with zeros to the trace's key
//! size; values are zeros of the request's value size, so the engine charges what the trace
//! says. An item larger than a page cannot be cached: its GETs miss and its SETs are counted as
//! `too_large`.

use std::time::Instant;

use locus_common::VirtualClock;
use locus_common::rng::{SPLITMIX64_GAMMA, mix64};
use locus_engine::control::{ControlConfig, Controller, IntervalRecord};
use locus_engine::{
    Engine, EngineConfig, EngineError, PartitionMode, PromotionMode, SetOptions, TenantConfig,
    TenantId, Tier,
};
use locus_trace::Op;
use serde::Serialize;

use crate::SimError;
use crate::experiment::{ControllerRun, Experiment, FastPartition, TierRun};
use crate::workload::{Item, Workload};

/// Requests between progress callbacks.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// Totals of one tenant in one run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TenantResult {
    /// Tenant name.
    pub name: String,
    /// GETs.
    pub gets: u64,
    /// GET hits.
    pub hits: u64,
    /// GET misses.
    pub misses: u64,
    /// SETs of the trace (not the fills after misses).
    pub sets: u64,
    /// DELETEs of the trace.
    pub deletes: u64,
    /// Hit ratio (hits / GETs; 0 without GETs).
    pub hit_ratio: f64,
    /// Σ miss penalties (µs).
    pub miss_cost_us: f64,
    /// Modelled mean GET latency: hit time + Σ penalties / GETs (µs).
    pub mean_latency_us: f64,
    /// Pages owned at the end.
    pub final_pages: u64,
    /// Target at the end (pages), if the controller set one.
    pub final_target: Option<u64>,
    /// K at the end.
    pub final_samples: u32,
    /// The engine's miss penalty estimate at the end (µs: hint or measured).
    pub engine_penalty_us: f64,
    /// SETs refused: the item is larger than a page, or memory is full and nothing may be
    /// evicted (`noeviction`).
    pub too_large: u64,
    /// Evictions.
    pub evictions: u64,
    /// Memory tiers (experiments with `[tier]` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<TierResult>,
}

impl TenantResult {
    fn finish(&mut self, hit_us: f64) {
        if self.gets > 0 {
            self.hit_ratio = self.hits as f64 / self.gets as f64;
            self.mean_latency_us = hit_us + self.miss_cost_us / self.gets as f64;
        }
        if let Some(tr) = self.tier.as_mut() {
            tr.finish(self.gets, self.miss_cost_us);
            if self.gets > 0 {
                self.mean_latency_us = tr.service_us / self.gets as f64;
            }
        }
    }
}

/// One tenant's tier figures in a run with `[tier]` (an all-fast run has every hit fast).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TierResult {
    /// GET hits served by the fast tier.
    pub fast_hits: u64,
    /// GET hits served by the slow tier.
    pub slow_hits: u64,
    /// Fast hits / GETs (the dissertation's fast-tier hit rate).
    pub fast_hit_ratio: f64,
    /// Slow → fast moves (whole run only).
    pub promotions: u64,
    /// Fast → slow moves (whole run only).
    pub demotions: u64,
    /// Demotions made to give promotions room.
    pub chained_demotions: u64,
    /// Evictions from the fast tier by cause (whole run only).
    pub fast_evictions: locus_engine::tier::TierEvictions,
    /// Evictions from the slow tier by cause (whole run only).
    pub slow_evictions: locus_engine::tier::TierEvictions,
    /// Modelled GET service time (µs): fast hits × hit time + slow hits × slow hit time +
    /// miss penalties + moves × move time.
    pub service_us: f64,
    /// Modelled GET throughput of one server thread: GETs / service time (per second).
    pub gets_per_sec: f64,
    /// Fast + slow hit time summed (µs), before misses and moves.
    hit_time_us: f64,
    /// Moves × move time (µs).
    move_time_us: f64,
}

impl TierResult {
    fn finish(&mut self, gets: u64, miss_cost_us: f64) {
        if gets > 0 {
            self.fast_hit_ratio = self.fast_hits as f64 / gets as f64;
        }
        self.service_us = self.hit_time_us + miss_cost_us + self.move_time_us;
        if self.service_us > 0.0 {
            self.gets_per_sec = gets as f64 / self.service_us * 1e6;
        }
    }

    fn add(&mut self, o: &TierResult) {
        self.fast_hits += o.fast_hits;
        self.slow_hits += o.slow_hits;
        self.promotions += o.promotions;
        self.demotions += o.demotions;
        self.chained_demotions += o.chained_demotions;
        for (a, b) in [
            (&mut self.fast_evictions, &o.fast_evictions),
            (&mut self.slow_evictions, &o.slow_evictions),
        ] {
            a.reactive += b.reactive;
            a.proactive += b.proactive;
            a.page_reclaim += b.page_reclaim;
        }
        self.hit_time_us += o.hit_time_us;
        self.move_time_us += o.move_time_us;
    }
}

/// One decision interval of a run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct IntervalRow {
    /// Decision index.
    pub interval: u64,
    /// Trace requests replayed before the decision.
    pub at_request: u64,
    /// Engine data-path accesses at the decision (GETs, SETs including fills, DELs).
    pub at_access: u64,
    /// Engine clock (µs).
    pub at_us: u64,
    /// Pages per tenant after the decision.
    pub pages: Vec<u64>,
    /// Targets per tenant.
    pub targets: Vec<Option<u64>>,
    /// K per tenant.
    pub samples: Vec<u32>,
    /// Hit ratio per tenant since the previous decision (`None`: no GETs).
    pub hit_ratio: Vec<Option<f64>>,
    /// Hit ratio over all tenants since the previous decision.
    pub overall_hit_ratio: Option<f64>,
    /// Miss penalty per tenant the decision saw (µs).
    pub penalty_us: Vec<f64>,
    /// Page moves and releases carried out.
    pub moves: u64,
    /// The controller's named figures.
    pub notes: Vec<(String, f64)>,
}

/// GET outcomes of one phase (only GET counters, miss cost and latency are filled).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PhaseResult {
    /// Phase name.
    pub name: String,
    /// Per tenant.
    pub tenants: Vec<TenantResult>,
    /// All tenants.
    pub overall: TenantResult,
}

/// A curve a controller used at a decision.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct UsedCurve {
    /// Trace requests before the decision.
    pub at_request: u64,
    /// Tenant (pool) index.
    pub pool: u32,
    /// The controller's label for it (e.g. `krr K=5`).
    pub label: String,
    /// The curve.
    pub mrc: locus_mrc::Mrc,
}

/// What a run produced.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct RunResult {
    /// Label of the controller entry.
    pub label: String,
    /// Controller registry name.
    pub controller: String,
    /// Per tenant.
    pub tenants: Vec<TenantResult>,
    /// All tenants together (latency: GET-weighted mean).
    pub overall: TenantResult,
    /// Per phase of the generated workload (empty without phases).
    pub phases: Vec<PhaseResult>,
    /// Steady-state windows (experiment key `steady`, else empty): the last fraction of the
    /// whole run (named `run`, when its length is known) then of each phase (named as the
    /// phase).
    pub steady: Vec<PhaseResult>,
    /// The curves of the last decision that reported any.
    pub last_curves: Vec<UsedCurve>,
    /// Decisions, oldest first.
    pub intervals: Vec<IntervalRow>,
    /// Requests replayed.
    pub requests: u64,
    /// Trace requests skipped because their tenant column matched no tenant.
    pub skipped: u64,
    /// Wall-clock seconds of the replay.
    pub wall_secs: f64,
    /// Requests per wall-clock second.
    pub requests_per_sec: f64,
    /// CPU seconds of the replay thread (the data path; an offloaded controller's profiling
    /// thread is not counted). `None` where the OS does not tell (`/proc/thread-self/schedstat`).
    pub replay_cpu_secs: Option<f64>,
    /// Whether the controller profiled on a thread of its own (never for one with nothing to
    /// profile, such as `shared` or the oracles).
    pub offload: bool,
    /// pRedis dump/load actions carried out (empty when every tenant's `dump_load` is `never`).
    pub dump_load: Vec<crate::dumpload::DumpLoadEvent>,
}

/// CPU time of the calling thread in nanoseconds (Linux: `/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// The engine for `exp` with its tenants (no controller yet).
///
/// # Errors
/// [`SimError::Engine`] when the configuration is refused.
pub fn build_engine(
    exp: &Experiment,
    maxmemory: u64,
    clock: &VirtualClock,
) -> Result<Engine, SimError> {
    build_engine_for(exp, maxmemory, clock, None)
}

/// [`build_engine`] with a controller entry's per-run eviction overrides (policy, K, pool).
///
/// # Errors
/// [`SimError::Engine`] when the configuration is refused.
pub fn build_engine_for(
    exp: &Experiment,
    maxmemory: u64,
    clock: &VirtualClock,
    run: Option<&ControllerRun>,
) -> Result<Engine, SimError> {
    // Probes and the raw replay (no run entry) size and time an all-fast engine.
    let tier = exp.tier.as_ref().filter(|_| run.is_some()).and_then(|ts| {
        let mut c = ts.engine.clone();
        match run.and_then(|r| r.tier) {
            Some(TierRun::AllFast) => return None,
            Some(TierRun::Sdtmm) => c.promotion = PromotionMode::Reuse,
            Some(TierRun::Naive) => c.promotion = PromotionMode::Naive,
            Some(TierRun::DemotionOnly) => c.promotion = PromotionMode::Off,
            None => {}
        }
        Some(c)
    });
    let cfg = EngineConfig {
        maxmemory,
        page_size: exp.page_size,
        partition: PartitionMode::Shared,
        lru_clock: exp.lru_clock,
        seed: exp.seed,
        tier,
        ..EngineConfig::default()
    };
    let mut engine =
        Engine::new(cfg, std::sync::Arc::new(clock.clone())).map_err(SimError::Engine)?;
    for t in &exp.tenants {
        let mut tc = TenantConfig::new(&t.name);
        tc.policy = run.and_then(|r| r.policy).unwrap_or(t.policy);
        tc.samples = run.and_then(|r| r.samples).unwrap_or(t.samples);
        tc.evpool_size = run.and_then(|r| r.evpool_size).unwrap_or(t.evpool_size);
        let id = engine.add_tenant(tc).map_err(SimError::Engine)?;
        if t.penalty_hint {
            engine.set_penalty_hint(id, t.penalty.mean());
        }
    }
    Ok(engine)
}

/// The key bytes of a request: id (8 bytes LE) padded with zeros to `key_size`.
#[inline]
pub fn key_bytes(buf: &mut Vec<u8>, key: u64, key_size: u32) {
    buf.clear();
    buf.extend_from_slice(&key.to_le_bytes());
    let want = (key_size as usize).min(MAX_KEY_BYTES);
    if want > 8 {
        buf.resize(want, 0);
    }
}

/// Mixed into the experiment seed for the penalty draws.
pub const PENALTY_SEED: u64 = 0x00C0_FFEE_D00D_0001;

/// Longest key the simulator builds (longer trace keys are charged this much).
pub const MAX_KEY_BYTES: usize = 4096;

/// A uniform draw in `[0, 1)` from the seed and the request index: every controller sees the same
/// penalty for the same request, whatever its earlier misses were.
#[inline]
pub fn penalty_draw(seed: u64, index: u64) -> f64 {
    let z = mix64(seed ^ index.wrapping_mul(SPLITMIX64_GAMMA));
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Replays the experiment with controller `ctl`.
///
/// `schedule`: a controller per phase (the per-phase oracles' plans), installed at that
/// phase's boundary; empty for one controller throughout. `progress(requests)` is
/// called every [`PROGRESS_EVERY`] requests.
///
/// # Errors
/// Trace errors, a trace-column penalty missing on a request, engine configuration errors.
pub fn run(
    exp: &Experiment,
    maxmemory: u64,
    entry: &ControllerRun,
    ctl: Box<dyn Controller>,
    mut schedule: Vec<Option<Box<dyn Controller>>>,
    offload: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<RunResult, SimError> {
    let clock = VirtualClock::new(0);
    let mut engine = build_engine_for(exp, maxmemory, &clock, Some(entry))?;
    set_fast_targets(exp, entry, &mut engine)?;
    let label = entry.label.as_str();
    let controller = ctl.name().to_string();
    engine.set_class_mode(exp.class_mode);
    let control_cfg = ControlConfig {
        interval: exp.interval,
        max_moves: exp.max_moves,
        offload,
    };
    engine.set_controller(ctl, control_cfg);
    // Decision 0 at request 0: targets (oracle) and initial allocations apply from the start.
    engine.run_controller();
    let mut phase = 0usize;
    // Steady-state windows: (name, phase or None for the whole run, first counted position).
    let all_generated = exp
        .tenants
        .iter()
        .all(|t| matches!(t.source, crate::experiment::Source::Generator(_)));
    let tail = |len: u64, f: f64| len - ((len as f64 * f).round() as u64).min(len);
    let mut windows: Vec<(String, Option<usize>, u64)> = Vec::new();
    if let Some(f) = exp.steady {
        if let Some(total) = exp.total_requests() {
            windows.push(("run".into(), None, tail(total, f)));
        }
        if all_generated {
            for (i, p) in exp.phases.iter().enumerate() {
                windows.push((p.name.clone(), Some(i), tail(p.requests, f)));
            }
        }
    }
    let blank = || -> Vec<TenantResult> {
        exp.tenants
            .iter()
            .map(|t| TenantResult {
                name: t.name.clone(),
                tier: exp.tier.as_ref().map(|_| TierResult::default()),
                ..TenantResult::default()
            })
            .collect()
    };
    let mut steady_acc: Vec<Vec<TenantResult>> = windows.iter().map(|_| blank()).collect();
    let mut in_phase = 0u64;
    // GET outcomes per phase and tenant (empty without phases).
    let mut per_phase: Vec<Vec<TenantResult>> = exp.phases.iter().map(|_| blank()).collect();
    let n = exp.tenants.len();
    let ids: Vec<TenantId> = engine.tenant_ids();
    let mut res: Vec<TenantResult> = blank();
    let hit_us: Vec<f64> = exp.tenants.iter().map(|t| t.hit_us).collect();
    let hit_tick: Vec<u64> = hit_us.iter().map(|h| h.round() as u64).collect();
    // Slow-tier hit time per tenant, and the extra clock ticks over a fast hit.
    let slow_us: Vec<f64> = hit_us
        .iter()
        .map(|&h| {
            exp.tier
                .as_ref()
                .and_then(|ts| ts.slow_hit_us)
                .unwrap_or(2.0 * h)
        })
        .collect();
    let slow_extra_tick: Vec<u64> = slow_us
        .iter()
        .zip(&hit_us)
        .map(|(s, h)| (s - h).max(0.0).round() as u64)
        .collect();
    let value = vec![0u8; exp.page_size as usize];
    let mut key = Vec::with_capacity(64);
    let mut wl = Workload::open(exp)?;
    let mut item = Item::default();
    let mut intervals = Vec::new();
    let mut seen = 0u64;
    let mut last_curves: Vec<UsedCurve> = Vec::new();
    let mut last_cum = (vec![0u64; n], vec![0u64; n]);
    let mut index = 0u64;
    let started = Instant::now();
    let cpu_start = thread_cpu_ns();
    let penalty_seed = exp.seed ^ PENALTY_SEED;
    let mut dump_load = crate::dumpload::DumpLoad::new(exp, entry);
    while wl.next(&mut item)? {
        if item.phase != phase {
            phase = item.phase;
            in_phase = 0;
            if let Some(next) = schedule.get_mut(phase).and_then(Option::take) {
                // A new controller starts a new decision log: collect from its first decision.
                engine.set_controller(next, control_cfg);
                engine.run_controller();
                seen = 0;
            }
        }
        let t = item.tenant;
        let tid = ids[t];
        let r = &item.req;
        clock.set_us(item.time_us);
        key_bytes(&mut key, r.key, r.key_size);
        let vlen = (r.value_size.min(value.len() as u64)) as usize;
        let tr = &mut res[t];
        // (GET outcome, whether the request wrote or deleted the key) for dump/load.
        let mut outcome = (None, true);
        match r.op {
            Op::Get => {
                tr.gets += 1;
                let mut pen = 0.0;
                let hit = engine.get(tid, &key).is_some();
                let slow = hit && engine.last_hit_tier() == Some(Tier::Slow);
                outcome = (Some(hit), !hit);
                if hit {
                    tr.hits += 1;
                    clock.advance_us(hit_tick[t]);
                    if slow {
                        clock.advance_us(slow_extra_tick[t]);
                    }
                } else {
                    tr.misses += 1;
                    pen = exp.tenants[t]
                        .penalty
                        .draw(penalty_draw(penalty_seed, index), r.penalty_us)
                        .ok_or_else(|| SimError::Workload {
                            what: format!("tenant '{}'", exp.tenants[t].name),
                            message: format!(
                                "request {index} has no penalty column and penalty = \"trace\" gives no default"
                            ),
                        })?;
                    tr.miss_cost_us += pen;
                    clock.advance_us(pen.round() as u64);
                    store(&mut engine, tid, &key, &value[..vlen], r.value_size, tr)?;
                }
                let count = |p: &mut TenantResult| {
                    p.gets += 1;
                    if hit {
                        p.hits += 1;
                        note_tier_hit(&mut p.tier, slow, slow_us[t], hit_us[t]);
                    } else {
                        p.misses += 1;
                        p.miss_cost_us += pen;
                    }
                };
                if hit {
                    note_tier_hit(&mut res[t].tier, slow, slow_us[t], hit_us[t]);
                }
                if let Some(ph) = per_phase.get_mut(item.phase) {
                    count(&mut ph[t]);
                }
                for (w, acc) in windows.iter().zip(steady_acc.iter_mut()) {
                    let inside = match w.1 {
                        None => index >= w.2,
                        Some(ph) => ph == item.phase && in_phase >= w.2,
                    };
                    if inside {
                        count(&mut acc[t]);
                    }
                }
            }
            Op::Set => {
                tr.sets += 1;
                store(&mut engine, tid, &key, &value[..vlen], r.value_size, tr)?;
            }
            Op::Delete => {
                tr.deletes += 1;
                engine.delete(tid, &key);
            }
        }
        if let Some(dl) = dump_load.as_mut() {
            dl.on_request(
                &mut engine,
                t,
                &key,
                outcome.0,
                outcome.1,
                item.time_us,
                index,
            );
        }
        index += 1;
        in_phase += 1;
        let d = engine.control_decisions();
        if d != seen {
            collect(
                &engine,
                d - seen,
                index - 1,
                &mut intervals,
                &mut last_cum,
                &mut last_curves,
            );
            seen = d;
        }
        if index.is_multiple_of(PROGRESS_EVERY) {
            progress(index);
        }
    }
    progress(index);
    // An offloaded controller finishes its queued events inside the measured time.
    engine.sync_controller();
    let wall = started.elapsed().as_secs_f64();
    let replay_cpu_secs = thread_cpu_ns()
        .zip(cpu_start)
        .map(|(end, start)| end.saturating_sub(start) as f64 / 1e9);
    let targets = engine.targets();
    for (i, tr) in res.iter_mut().enumerate() {
        let st = engine.tenant_stats(ids[i]);
        tr.final_pages = st.pages;
        tr.final_samples = st.samples;
        tr.final_target = targets.get(i).copied().flatten();
        tr.evictions = st.evictions;
        tr.engine_penalty_us = engine.penalty(ids[i]).0;
        if let (Some(r), Some(st)) = (tr.tier.as_mut(), engine.tenant_tier_stats(ids[i])) {
            r.promotions = st.promotions;
            r.demotions = st.demotions;
            r.chained_demotions = st.chained_demotions;
            r.fast_evictions = st.tiers[0].evictions;
            r.slow_evictions = st.tiers[1].evictions;
            let move_us = exp
                .tier
                .as_ref()
                .and_then(|ts| ts.move_us)
                .unwrap_or(slow_us[i]);
            r.move_time_us = (st.promotions + st.demotions) as f64 * move_us;
        }
        tr.finish(hit_us[i]);
    }
    let overall = overall_of(&res);
    let summarize = |name: String, mut tenants: Vec<TenantResult>| {
        for (i, tr) in tenants.iter_mut().enumerate() {
            tr.finish(hit_us[i]);
        }
        PhaseResult {
            name,
            overall: overall_of(&tenants),
            tenants,
        }
    };
    let phases = exp
        .phases
        .iter()
        .zip(per_phase)
        .map(|(p, tenants)| summarize(p.name.clone(), tenants))
        .collect();
    let steady = windows
        .into_iter()
        .zip(steady_acc)
        .map(|(w, tenants)| summarize(w.0, tenants))
        .collect();
    Ok(RunResult {
        label: label.to_string(),
        phases,
        steady,
        last_curves,
        controller,
        tenants: res,
        overall,
        intervals,
        requests: index,
        skipped: wl.skipped(),
        wall_secs: wall,
        requests_per_sec: if wall > 0.0 { index as f64 / wall } else { 0.0 },
        replay_cpu_secs,
        offload: engine.controller_offloaded(),
        dump_load: dump_load.map(|d| d.into_events()).unwrap_or_default(),
    })
}

/// The `overall` row of finished tenant rows: counts summed, hit ratio over all GETs, mean latency
/// weighted by GETs.
fn overall_of(tenants: &[TenantResult]) -> TenantResult {
    let mut overall = TenantResult {
        name: "overall".into(),
        ..TenantResult::default()
    };
    let mut latency_sum = 0.0;
    for tr in tenants {
        overall.gets += tr.gets;
        overall.hits += tr.hits;
        overall.misses += tr.misses;
        overall.sets += tr.sets;
        overall.deletes += tr.deletes;
        overall.miss_cost_us += tr.miss_cost_us;
        overall.final_pages += tr.final_pages;
        overall.too_large += tr.too_large;
        overall.evictions += tr.evictions;
        latency_sum += tr.mean_latency_us * tr.gets as f64;
        if let Some(t) = &tr.tier {
            overall.tier.get_or_insert_with(TierResult::default).add(t);
        }
    }
    if let Some(t) = overall.tier.as_mut() {
        t.finish(overall.gets, overall.miss_cost_us);
    }
    if overall.gets > 0 {
        overall.hit_ratio = overall.hits as f64 / overall.gets as f64;
        overall.mean_latency_us = latency_sum / overall.gets as f64;
    }
    overall
}

/// Gives the tenants fast-tier targets as the run's `fast_partition` says (equal shares, or the
/// oracle's DP over exact LRU curves with the fast tier's pages as the budget); `controller`
/// leaves them to the run's controller, online.
fn set_fast_targets(
    exp: &Experiment,
    entry: &ControllerRun,
    engine: &mut Engine,
) -> Result<(), SimError> {
    let (Some(mode), Some(ts)) = (entry.fast_partition, engine.tier_stats()) else {
        return Ok(());
    };
    let fast_pages = ts.budget_pages[0];
    let n = exp.tenants.len() as u64;
    let pages: Vec<u64> = match mode {
        FastPartition::Free | FastPartition::Controller => return Ok(()),
        FastPartition::Equal => vec![fast_pages / n; n as usize],
        FastPartition::Mrc => {
            let curves = crate::exact::exact_curves(exp, fast_pages * exp.page_size)?;
            let settings = crate::experiment::OracleSettings {
                objective: None,
                step: 0,
                per_phase: false,
            };
            crate::exact::plan_oracle(exp, &curves, &settings)
                .map_err(|source| SimError::Control {
                    label: entry.label.clone(),
                    source,
                })?
                .pages
        }
    };
    let targets: Vec<Option<u64>> = pages.iter().map(|p| Some(p * exp.page_size)).collect();
    engine.set_fast_targets(&targets).map_err(SimError::Engine)
}

/// Counts a GET hit in a tier result (a run with `[tier]`): fast or slow, and its time.
fn note_tier_hit(tier: &mut Option<TierResult>, slow: bool, slow_us: f64, fast_us: f64) {
    if let Some(tr) = tier.as_mut() {
        if slow {
            tr.slow_hits += 1;
            tr.hit_time_us += slow_us;
        } else {
            tr.fast_hits += 1;
            tr.hit_time_us += fast_us;
        }
    }
}

/// SET with the simulator's accounting: an item larger than a page is counted, not an error.
#[inline]
fn store(
    engine: &mut Engine,
    t: TenantId,
    key: &[u8],
    value: &[u8],
    want_len: u64,
    tr: &mut TenantResult,
) -> Result<(), SimError> {
    if want_len > value.len() as u64 {
        tr.too_large += 1;
        return Ok(());
    }
    match engine.set(t, key, value, SetOptions::default()) {
        Ok(_) => Ok(()),
        Err(EngineError::ItemTooLarge { .. }) | Err(EngineError::OutOfMemory) => {
            tr.too_large += 1;
            Ok(())
        }
        Err(e) => Err(SimError::Engine(e)),
    }
}

/// Appends the `new` newest decisions as rows.
fn collect(
    engine: &Engine,
    new: u64,
    at_request: u64,
    out: &mut Vec<IntervalRow>,
    last: &mut (Vec<u64>, Vec<u64>),
    curves: &mut Vec<UsedCurve>,
) {
    let mut take = |r: &IntervalRecord| {
        out.push(row(r, at_request, last));
        if !r.curves.is_empty() {
            *curves = r
                .curves
                .iter()
                .map(|c| UsedCurve {
                    at_request,
                    pool: c.pool.0,
                    label: c.label.clone(),
                    mrc: c.mrc.clone(),
                })
                .collect();
        }
    };
    if new == 1 {
        if let Some(r) = engine.last_control_record() {
            take(r);
        }
        return;
    }
    let recs = engine.control_records();
    let skip = recs.len().saturating_sub(new as usize);
    for r in &recs[skip..] {
        take(r);
    }
}

fn row(r: &IntervalRecord, at_request: u64, last: &mut (Vec<u64>, Vec<u64>)) -> IntervalRow {
    let n = r.hits.len();
    last.0.resize(n, 0);
    last.1.resize(n, 0);
    let mut hr = Vec::with_capacity(n);
    let (mut th, mut tg) = (0u64, 0u64);
    for i in 0..n {
        let h = r.hits[i].saturating_sub(last.0[i]);
        let m = r
            .misses
            .get(i)
            .copied()
            .unwrap_or(0)
            .saturating_sub(last.1[i]);
        th += h;
        tg += h + m;
        hr.push((h + m > 0).then(|| h as f64 / (h + m) as f64));
        last.0[i] = r.hits[i];
        last.1[i] = r.misses.get(i).copied().unwrap_or(0);
    }
    IntervalRow {
        interval: r.interval,
        at_request,
        at_access: r.at_request,
        at_us: r.at_us,
        pages: r.pages.clone(),
        targets: r.targets.clone(),
        samples: r.samples.clone(),
        hit_ratio: hr,
        overall_hit_ratio: (tg > 0).then(|| th as f64 / tg as f64),
        penalty_us: r.penalty_us.clone(),
        moves: r.moves_done,
        notes: r.notes.clone(),
    }
}

/// What [`raw_rates`] measured: (requests, wall seconds) of each reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawRates {
    /// The request stream read alone.
    pub read: (u64, f64),
    /// The stream replayed on a bare engine.
    pub bare: (u64, f64),
}

/// Speed references for the simulator's own rate (`bench/sim_speed.sh`): the same request stream
/// read without an engine, and replayed on a bare engine (GET, SET on a miss; no controller, no
/// clock, no accounting).
///
/// # Errors
/// Trace errors, engine configuration errors.
pub fn raw_rates(exp: &Experiment, maxmemory: u64) -> Result<RawRates, SimError> {
    let started = Instant::now();
    let mut wl = Workload::open(exp)?;
    let mut item = Item::default();
    let mut n = 0u64;
    let mut sink = 0u64;
    while wl.next(&mut item)? {
        sink = sink.wrapping_add(item.req.key);
        n += 1;
    }
    std::hint::black_box(sink);
    let read = (n, started.elapsed().as_secs_f64());

    let clock = VirtualClock::new(0);
    let mut engine = build_engine(exp, maxmemory, &clock)?;
    let ids = engine.tenant_ids();
    let value = vec![0u8; exp.page_size as usize];
    let mut key = Vec::with_capacity(64);
    let started = Instant::now();
    let mut wl = Workload::open(exp)?;
    let mut m = 0u64;
    while wl.next(&mut item)? {
        let r = &item.req;
        let t = ids[item.tenant];
        key_bytes(&mut key, r.key, r.key_size);
        let v = &value[..(r.value_size.min(value.len() as u64)) as usize];
        match r.op {
            Op::Get => {
                if engine.get(t, &key).is_none() {
                    let _ = engine.set(t, &key, v, SetOptions::default());
                }
            }
            Op::Set => {
                let _ = engine.set(t, &key, v, SetOptions::default());
            }
            Op::Delete => {
                engine.delete(t, &key);
            }
        }
        m += 1;
    }
    Ok(RawRates {
        read,
        bare: (m, started.elapsed().as_secs_f64()),
    })
}
