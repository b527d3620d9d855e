//! The oracle's first pass: exact LRU miss ratio curves of the whole run (and of each phase) per
//! tenant, from one pass over the experiment's request stream.
//!
//! Capacities are in bytes of pages, at page multiples, so a curve point is "the miss ratio of
//! this tenant alone with `p` pages". An item is charged the share of a page it takes as the
//! engine packs it: a page of its size class holds `⌊page / chunk⌋` items, so each costs
//! `page / ⌊page / chunk⌋` bytes (its chunk plus its share of the page's unusable tail): 3,000-byte
//! items in 4 KiB pages cost a whole page each, not 3 KiB, and a loop's cliff sits where the
//! engine's pages really hold it (issue 16: charging chunks, the plan put a 3,000-key loop a
//! quarter below its cliff). A
//! per-phase curve keeps the LRU stack across the boundary (the history is forgotten with
//! `Profiler::decay(0)`), so the first accesses of a phase are not wrongly cold.

use locus_alloc::Objective;
use locus_common::VirtualClock;
use locus_control::{
    ClassCurve, ControlError, PlanOptions, PoolCurve, curve_in_pages, plan, plan_classes,
};
use locus_mrc::{ExactLru, Metric, Mrc, Op, Profiler, Unit};
use locus_trace::Op as TraceOp;
use serde::Serialize;

use crate::SimError;
use crate::experiment::{Experiment, OracleSettings};
use crate::run::{MAX_KEY_BYTES, build_engine, penalty_draw};
use crate::workload::{Item, Workload};

/// Most points per curve (the partition DP's cost grows with the square of the points).
pub const MAX_POINTS: u64 = 2048;

/// One tenant's exact curve.
#[derive(Clone, Debug, Serialize)]
pub struct TenantCurve {
    /// Tenant name.
    pub tenant: String,
    /// GETs in the span.
    pub gets: u64,
    /// Mean miss penalty over those GETs (µs; the model's draws at each request).
    pub mean_penalty_us: f64,
    /// Miss ratio at capacities in bytes (page multiples, step `pages_per_point` pages).
    pub mrc: Mrc,
}

/// Curves of one span of the run (the whole run, or one phase).
#[derive(Clone, Debug, Serialize)]
pub struct SpanCurves {
    /// `whole` or the phase name.
    pub name: String,
    /// First request of the span.
    pub start_request: u64,
    /// Requests in it.
    pub requests: u64,
    /// One curve per tenant, in experiment order.
    pub tenants: Vec<TenantCurve>,
}

/// What the first pass found.
#[derive(Clone, Debug, Serialize)]
pub struct OracleCurves {
    /// Page size (bytes).
    pub page_size: u64,
    /// Pages of memory.
    pub pages_total: u64,
    /// Pages between curve points.
    pub pages_per_point: u64,
    /// The whole run.
    pub whole: SpanCurves,
    /// Each phase (empty without phases).
    pub phases: Vec<SpanCurves>,
    /// The partitions planned from these curves (set when the oracle runs).
    pub plan: Option<OraclePlan>,
}

/// The curve at `caps` (bytes), counting a reuse distance of exactly `c` bytes as a hit at `c`.
///
/// `ExactLru` keeps byte distances in a log-linear histogram whose buckets above 8 KiB are wider
/// than a byte (`2^(e-12)` at `2^e`) and interpolates inside a bucket, so at an exact page
/// multiple a distance equal to the capacity counted only half (a cliff one page late, reported
/// by helper B on one-item-per-page workloads). Evaluating at the top of the bucket that starts
/// at `c` counts it whole; distances up to `c + width - 1` (width ≤ c / 4096) count too.
fn at_page_edges(p: &ExactLru, caps: &[f64]) -> Result<Mrc, SimError> {
    let eval: Vec<f64> = caps
        .iter()
        .map(|&c| {
            let e = (c.max(1.0)).log2().floor() as i32;
            let width = 2f64.powi((e - 12).max(0));
            c + width - 1.0 + 0.5
        })
        .collect();
    let m = p.mrc(&eval)?;
    let points = caps
        .iter()
        .zip(m.points())
        .map(|(&c, &(_, y))| (c, y))
        .collect();
    Ok(Mrc::new(Unit::Bytes, Metric::Requests, points)?)
}

struct Span {
    name: String,
    start: u64,
    profilers: Vec<ExactLru>,
    gets: Vec<u64>,
    penalty: Vec<f64>,
}

impl Span {
    fn new(name: String, start: u64, n: usize) -> Self {
        Span {
            name,
            start,
            profilers: (0..n)
                .map(|_| ExactLru::new(Unit::Bytes, Metric::Requests))
                .collect(),
            gets: vec![0; n],
            penalty: vec![0.0; n],
        }
    }

    fn finish(&self, exp: &Experiment, end: u64, caps: &[f64]) -> Result<SpanCurves, SimError> {
        let mut tenants = Vec::new();
        for (i, p) in self.profilers.iter().enumerate() {
            tenants.push(TenantCurve {
                tenant: exp.tenants[i].name.clone(),
                gets: self.gets[i],
                mean_penalty_us: if self.gets[i] > 0 {
                    self.penalty[i] / self.gets[i] as f64
                } else {
                    0.0
                },
                mrc: at_page_edges(p, caps)?,
            });
        }
        Ok(SpanCurves {
            name: self.name.clone(),
            start_request: self.start,
            requests: end - self.start,
            tenants,
        })
    }
}

/// Bytes of page an item of chunk size `chunk` takes: `page / ⌊page / chunk⌋` (rounded to the
/// nearest byte), or the chunk itself if it is larger than a page.
pub fn page_share(page: u64, chunk: u32) -> u32 {
    match page / u64::from(chunk.max(1)) {
        0 => chunk,
        per_page => (page as f64 / per_page as f64)
            .round()
            .min(f64::from(u32::MAX)) as u32,
    }
}

/// One pass over the experiment's requests: exact curves per tenant, whole run and per phase.
///
/// # Errors
/// Trace errors; engine configuration errors (the probe engine that gives chunk sizes).
pub fn exact_curves(exp: &Experiment, maxmemory: u64) -> Result<OracleCurves, SimError> {
    let clock = VirtualClock::new(0);
    let probe = build_engine(exp, exp.page_size, &clock)?;
    let shares: Vec<u32> = probe
        .size_classes()
        .iter()
        .map(|(_, b)| page_share(exp.page_size, *b))
        .collect();
    let n = exp.tenants.len();
    let pages_total = maxmemory / exp.page_size;
    let step = pages_total.div_ceil(MAX_POINTS).max(1);
    let caps: Vec<f64> = (1..=pages_total / step)
        .map(|k| (k * step * exp.page_size) as f64)
        .collect();
    let mut whole = Span::new("whole".into(), 0, n);
    let mut phase: Option<Span> =
        (!exp.phases.is_empty()).then(|| Span::new(exp.phases[0].name.clone(), 0, n));
    let mut phases = Vec::new();
    let mut phase_idx = 0usize;
    let mut wl = Workload::open(exp)?;
    let mut it = Item::default();
    let mut index = 0u64;
    let seed = exp.seed ^ crate::run::PENALTY_SEED;
    while wl.next(&mut it)? {
        if let Some(ph) = &mut phase
            && it.phase < exp.phases.len()
            && it.phase != phase_idx
        {
            phase_idx = it.phase;
            phases.push(ph.finish(exp, index, &caps)?);
            let mut next = Span::new(exp.phases[it.phase].name.clone(), index, n);
            // Keep the stacks (reuse across the boundary), forget the recorded history.
            next.profilers = std::mem::take(&mut ph.profilers);
            for p in &mut next.profilers {
                p.decay(0.0)?;
            }
            *ph = next;
        }
        let t = it.tenant;
        let r = &it.req;
        let klen = (r.key_size as usize).clamp(8, MAX_KEY_BYTES);
        let charged = probe
            .class_for(klen, r.value_size.min(u32::MAX as u64) as usize)
            .map_or(u32::MAX, |c| shares[c.0 as usize]);
        let op = match r.op {
            TraceOp::Get => Op::Get,
            TraceOp::Set => Op::Set,
            TraceOp::Delete => Op::Del,
        };
        if op == Op::Get {
            let pen = exp.tenants[t]
                .penalty
                .draw(penalty_draw(seed, index), r.penalty_us)
                .unwrap_or(0.0);
            whole.gets[t] += 1;
            whole.penalty[t] += pen;
            if let Some(ph) = &mut phase {
                ph.gets[t] += 1;
                ph.penalty[t] += pen;
            }
        }
        whole.profilers[t].access(r.key, charged, op);
        if let Some(ph) = &mut phase {
            ph.profilers[t].access(r.key, charged, op);
        }
        index += 1;
    }
    if let Some(ph) = &phase {
        phases.push(ph.finish(exp, index, &caps)?);
    }
    Ok(OracleCurves {
        page_size: exp.page_size,
        pages_total,
        pages_per_point: step,
        whole: whole.finish(exp, index, &caps)?,
        phases,
        plan: None,
    })
}

/// The best partitions the curves allow: one for the whole run, and one per phase.
#[derive(Clone, Debug, Serialize)]
pub struct OraclePlan {
    /// The objective minimised.
    pub objective: String,
    /// Pages per tenant for the whole run.
    pub pages: Vec<u64>,
    /// Predicted miss ratio per tenant at those pages.
    pub miss_ratio: Vec<f64>,
    /// Pages per tenant for each phase (empty without phases).
    pub phase_pages: Vec<Vec<u64>>,
}

fn pool_curves(span: &SpanCurves, page_size: u64, pages_total: u64) -> Vec<PoolCurve> {
    span.tenants
        .iter()
        .map(|t| PoolCurve {
            miss_ratio: curve_in_pages(&t.mrc, page_size as f64, pages_total),
            rate: t.gets as f64,
            penalty_us: t.mean_penalty_us,
        })
        .collect()
}

/// Plans the oracle's partitions from the exact curves.
///
/// # Errors
/// The planner's error (as [`ControlError::NotAvailable`] naming the reason).
pub fn plan_oracle(
    exp: &Experiment,
    curves: &OracleCurves,
    settings: &OracleSettings,
) -> Result<OraclePlan, ControlError> {
    let with_penalty = exp
        .tenants
        .iter()
        .any(|t| t.penalty.mean().is_none_or(|m| m > 0.0));
    let objective = settings.objective.unwrap_or(if with_penalty {
        Objective::MissLatency
    } else {
        Objective::Misses
    });
    let opts = PlanOptions {
        step: settings.step,
        ..PlanOptions::new(curves.pages_total, objective)
    };
    let bad = |e: locus_control::PlanError| ControlError::NotAvailable {
        name: "oracle".into(),
        why: format!("planning failed: {e}"),
    };
    let whole = plan(
        &pool_curves(&curves.whole, curves.page_size, curves.pages_total),
        &opts,
    )
    .map_err(bad)?;
    let mut phase_pages = Vec::new();
    for span in &curves.phases {
        let p = plan(
            &pool_curves(span, curves.page_size, curves.pages_total),
            &opts,
        )
        .map_err(bad)?;
        phase_pages.push(p.pages);
    }
    Ok(OraclePlan {
        objective: objective.to_string(),
        pages: whole.pages,
        miss_ratio: whole.miss_ratio,
        phase_pages,
    })
}

/// One (tenant, size class) of the slab oracle's plan.
#[derive(Clone, Debug, Serialize)]
pub struct ClassPlan {
    /// Tenant name.
    pub tenant: String,
    /// Size class index.
    pub class: u16,
    /// Its chunk size (bytes).
    pub chunk_bytes: u32,
    /// GETs of items of this class in the run.
    pub gets: u64,
    /// Pages the plan gives it.
    pub pages: u64,
    /// Its exact miss ratio at those pages.
    pub miss_ratio: f64,
}

/// The slab oracle's first pass and plan: exact LRU curves per (tenant, size class) in objects
/// (a class's page holds `page_size / chunk` items), misses as the cost, one best allocation of
/// every page over all classes (`control::plan_classes`, LAMA's Algorithm 1 on the whole run).
///
/// # Errors
/// Trace and engine errors; the planner's error as [`SimError::Control`].
pub fn slab_plan(exp: &Experiment, maxmemory: u64) -> Result<Vec<ClassPlan>, SimError> {
    Ok(slab_plans(exp, maxmemory, false)?.0)
}

/// [`slab_plan`] of the whole run and, with `per_phase`, one of each phase of the generated
/// workload (curves of that phase's requests only), from one pass.
///
/// # Errors
/// As [`slab_plan`].
pub fn slab_plans(
    exp: &Experiment,
    maxmemory: u64,
    per_phase: bool,
) -> Result<(Vec<ClassPlan>, Vec<Vec<ClassPlan>>), SimError> {
    use std::collections::BTreeMap;
    let clock = VirtualClock::new(0);
    let probe = build_engine(exp, exp.page_size, &clock)?;
    let chunks: Vec<u32> = probe.size_classes().iter().map(|(_, b)| *b).collect();
    let pages_total = maxmemory / exp.page_size;
    type Profiles = BTreeMap<(usize, u16), (ExactLru, u64)>;
    let mut whole: Profiles = BTreeMap::new();
    let mut phases: Vec<Profiles> = Vec::new();
    let mut wl = Workload::open(exp)?;
    let mut it = Item::default();
    while wl.next(&mut it)? {
        let r = &it.req;
        let klen = (r.key_size as usize).clamp(8, MAX_KEY_BYTES);
        let Some(class) = probe.class_for(klen, r.value_size.min(u32::MAX as u64) as usize) else {
            continue;
        };
        let op = match r.op {
            TraceOp::Get => Op::Get,
            TraceOp::Set => Op::Set,
            TraceOp::Delete => Op::Del,
        };
        let feed = |prof: &mut Profiles| {
            let e = prof
                .entry((it.tenant, class.0))
                .or_insert_with(|| (ExactLru::new(Unit::Objects, Metric::Requests), 0));
            if op == Op::Get {
                e.1 += 1;
            }
            e.0.access(r.key, 1, op);
        };
        feed(&mut whole);
        if per_phase && !exp.phases.is_empty() {
            if phases.len() <= it.phase {
                phases.resize_with(it.phase + 1, BTreeMap::new);
            }
            feed(&mut phases[it.phase]);
        }
    }
    let plan_of = |prof: &Profiles| -> Result<Vec<ClassPlan>, SimError> {
        let mut curves = Vec::new();
        let mut keys = Vec::new();
        for (&(t, c), (p, gets)) in prof {
            let per_page = (exp.page_size / u64::from(chunks[c as usize]).max(1)).max(1);
            let caps: Vec<f64> = (1..=pages_total).map(|j| (j * per_page) as f64).collect();
            let mrc = p.mrc(&caps)?;
            let mut cost = vec![*gets as f64];
            cost.extend(mrc.points().iter().map(|(_, m)| m * *gets as f64));
            curves.push(ClassCurve {
                pool: locus_engine::PoolId(t as u32),
                class: locus_engine::ClassId(c),
                cost,
            });
            keys.push((t, c, *gets));
        }
        let plan = plan_classes(&curves, pages_total).map_err(|source| SimError::Control {
            label: "slab-oracle".into(),
            source,
        })?;
        Ok(plan
            .iter()
            .zip(&keys)
            .zip(&curves)
            .map(|(((_, _, pages), &(t, c, gets)), curve)| ClassPlan {
                tenant: exp.tenants[t].name.clone(),
                class: c,
                chunk_bytes: chunks[c as usize],
                gets,
                pages: *pages,
                miss_ratio: if gets > 0 {
                    curve.cost[(*pages as usize).min(curve.cost.len() - 1)] / gets as f64
                } else {
                    0.0
                },
            })
            .collect())
    };
    let phase_plans = phases.iter().map(plan_of).collect::<Result<Vec<_>, _>>()?;
    Ok((plan_of(&whole)?, phase_plans))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_distance_equal_to_the_capacity_is_a_hit() {
        // Two 4096-byte items alternating: every reuse distance is exactly 8192 bytes.
        let mut p = ExactLru::new(Unit::Bytes, Metric::Requests);
        for i in 0..1000u64 {
            p.access(i % 2, 4096, Op::Get);
        }
        let m = at_page_edges(&p, &[4096.0, 8192.0, 12288.0]).unwrap();
        let mr: Vec<f64> = m.points().iter().map(|x| x.1).collect();
        assert_eq!(mr[0], 1.0);
        assert!((mr[1] - 2.0 / 1000.0).abs() < 1e-12, "{mr:?}");
        assert_eq!(m.points()[1].0, 8192.0);
        // Larger pages: a 3-item loop of 65536-byte items, distance exactly 196608 bytes.
        let mut q = ExactLru::new(Unit::Bytes, Metric::Requests);
        for i in 0..999u64 {
            q.access(i % 3, 65536, Op::Get);
        }
        let m = at_page_edges(&q, &[131072.0, 196608.0]).unwrap();
        assert_eq!(m.points()[0].1, 1.0);
        assert!((m.points()[1].1 - 3.0 / 999.0).abs() < 1e-12, "{m:?}");
    }
}
