//! The [`Profiler`] trait every model implements, the access tuple it is fed, and the shared
//! histogram-to-curve step (docs/models.md §0.4).

use crate::hist::Hist;
use crate::{Metric, Mrc, MrcError, Unit};

/// The operation of one access (docs/models.md §0.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// A lookup. Counted in the miss ratio; a miss is assumed to be followed by a fill (demand
    /// fill), so the key is in the cache afterwards.
    Get,
    /// A write (SET, UPDATE, append …): the key is in the cache afterwards with the given size. Not
    /// counted in the miss ratio.
    Set,
    /// A delete: the key leaves the cache; its next access is cold. The size is ignored by models
    /// that remember sizes.
    Del,
}

/// A miss-ratio-curve model fed one access at a time.
///
/// Contract:
/// * The caller feeds one tenant's (pool's, class's) accesses in order, as plain tuples. `key` is
///   a stable 64-bit identity of the key: a trace's numeric id or `locus_common::hash_key` of its
///   bytes. Profilers that sample hash it again with their own seed.
/// * `size` is the bytes the cache charges for the object (key + value); object-count models
///   ignore it. A size of 0 counts as 1 byte.
/// * Each profiler keeps its own logical clock (one tick per access; EAET ticks by bytes).
/// * Implementations MUST NOT allocate on the path of an access they do not sample, and MUST NOT
///   panic on any input sequence.
/// * [`Profiler::mrc`] may be called at any time (for example at interval ends) and does not change
///   the state.
///
/// The engine's miniature simulation implements this trait too (it lives in `locus-engine`).
pub trait Profiler: Send {
    /// A short name with the parameters, e.g. `shards(R=0.01,adj)`.
    fn name(&self) -> String;
    /// The capacity unit of the curves this profiler produces.
    fn unit(&self) -> Unit;
    /// The miss-ratio metric of the curves this profiler produces.
    fn metric(&self) -> Metric;
    /// Feeds one access.
    fn access(&mut self, key: u64, size: u32, op: Op);
    /// Feeds one access whose spatial-sampling verdict the caller already knows: `sampled` is
    /// what a [`SpatialFilter`](crate::sampling::SpatialFilter) with this profiler's rate and seed says of
    /// `key`. Spatially sampled profilers skip their own hash; the others ignore the hint. Same
    /// effect as [`Profiler::access`].
    #[inline]
    fn access_filtered(&mut self, key: u64, size: u32, op: Op, sampled: bool) {
        let _ = sampled;
        self.access(key, size, op);
    }
    /// Number of accesses fed so far (all ops, sampled or not).
    fn accesses(&self) -> u64;
    /// The largest capacity worth plotting: the (estimated) peak number of distinct objects, or
    /// bytes, in the stream. Beyond it the curve is flat.
    fn working_set(&self) -> f64;
    /// The curve at `capacities` (in [`Profiler::unit`], strictly increasing, ≥ 0).
    ///
    /// # Errors
    /// [`MrcError::InvalidCurve`] if the capacities are not finite, non-negative and increasing.
    fn mrc(&self, capacities: &[f64]) -> Result<Mrc, MrcError>;
    /// Interval boundary (docs/models.md §0.6): multiplies the recorded histogram (the curve's evidence)
    /// by `factor` while keeping the model's state (stack, last-access tables, pending samples),
    /// so reuses spanning the boundary are still seen. `0` forgets the history, `0.5` halves its
    /// weight. AET/EAET's pending samples are not history: they keep their weight and still
    /// count as cold when a curve is computed.
    ///
    /// # Errors
    /// [`MrcError::InvalidDecay`] if `factor` is not in `[0, 1]` or the model cannot weigh
    /// history (footprint supports only `0`, which restarts it).
    fn decay(&mut self, factor: f64) -> Result<(), MrcError>;
}

/// Checks a decay factor.
pub(crate) fn check_decay(model: &str, factor: f64) -> Result<(), MrcError> {
    if (0.0..=1.0).contains(&factor) {
        Ok(())
    } else {
        Err(MrcError::InvalidDecay {
            model: model.into(),
            factor,
            reason: "the factor must be in [0, 1]".into(),
        })
    }
}

/// Checks a capacity list: finite, non-negative, strictly increasing.
pub(crate) fn check_capacities(c: &[f64]) -> Result<(), MrcError> {
    let mut prev = f64::NEG_INFINITY;
    for &x in c {
        if !x.is_finite() || x < 0.0 || x <= prev {
            return Err(MrcError::InvalidCurve {
                reason: format!("capacities must be finite, >= 0 and increasing (at {x})"),
            });
        }
        prev = x;
    }
    Ok(())
}

/// The weight an access contributes to the miss-ratio denominator.
#[inline]
pub(crate) fn metric_weight(metric: Metric, size: u32) -> f64 {
    match metric {
        Metric::Requests => 1.0,
        Metric::Bytes => size.max(1) as f64,
    }
}

/// The cost of an object in a capacity unit (object-count models: 1).
#[inline]
pub(crate) fn unit_weight(unit: Unit, size: u32) -> u32 {
    match unit {
        Unit::Objects => 1,
        Unit::Bytes => size.max(1),
    }
}

/// Sub-bucket bits for distance histograms: object distances exact up to 2^23, bytes to 1/4096.
pub(crate) fn dist_sub_bits(unit: Unit) -> u32 {
    match unit {
        Unit::Objects => 22,
        Unit::Bytes => 12,
    }
}

/// docs/models.md §0.4 with `_adj`: `mr(c) = 1 − (zero + weight(d ≤ c·scale)) / (zero + Σ hist + cold)`.
///
/// `zero` is the `_adj` correction (weight that hits at every size, may be negative); `scale`
/// converts a full-size capacity to the histogram's units (`R` when sampled distances are kept
/// unscaled).
pub(crate) fn mrc_from_hist(
    hist: &Hist,
    zero: f64,
    scale: f64,
    unit: Unit,
    metric: Metric,
    capacities: &[f64],
) -> Result<Mrc, MrcError> {
    check_capacities(capacities)?;
    let xs: Vec<f64> = capacities.iter().map(|c| c * scale).collect();
    let (hits, finite) = hist.weight_at_most_and_total(&xs);
    let total = zero + finite + hist.inf;
    let points = capacities
        .iter()
        .zip(hits)
        .map(|(&c, h)| {
            let m = if total > 0.0 {
                1.0 - (zero + h) / total
            } else {
                1.0
            };
            (c, m)
        })
        .collect();
    Mrc::new(unit, metric, points)
}
