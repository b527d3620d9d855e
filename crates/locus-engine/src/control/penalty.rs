//! Miss penalty per pool: an operator's hint, or measured as pRedis does, as the time between a
//! GET miss and the SET of the same key by the same tenant (the client fetched the value from its
//! backend and stored it).
//!
//! Only keys whose hash falls in one sixteenth of the hash space are followed (spatial sampling:
//! the mean gap is unbiased, and the data path pays a map operation on one access in sixteen),
//! once the tenant has had a gap measured on such a key. Until then every key is followed: a
//! tenant of a few keys may have none in the sample (3 keys: 82% of the time) and would never
//! get a penalty; a large one leaves this mode at its first sampled gap.
//! Pending misses are kept per tenant in a bounded map (key hash → miss time); when it is full,
//! entries older than [`STALE_US`] are dropped, and if that frees nothing the new miss is not
//! tracked. Gaps are averaged with an exponentially weighted mean (weight [`EWMA_WEIGHT`]) so the
//! estimate follows a backend that slows down.

use std::collections::HashMap;

/// Pending misses tracked per tenant.
const MAX_PENDING: usize = 65_536;
/// A miss not followed by a SET within this time is forgotten (µs).
const STALE_US: u64 = 10_000_000;
/// Keys with `hash >> SAMPLE_SHIFT == 0` are followed (1 in 16).
const SAMPLE_SHIFT: u32 = 60;
/// Weight of a new gap in the running mean.
const EWMA_WEIGHT: f64 = 0.01;

#[derive(Debug, Default, Clone)]
struct TenantPenalty {
    pending: HashMap<u64, u64>,
    mean_us: f64,
    samples: u64,
    /// Gaps measured on keys of the 1/16 sample; while 0, every key is followed.
    sampled_gaps: u64,
    hint_us: Option<f64>,
}

impl TenantPenalty {
    /// Folds one measured gap into the running mean.
    fn add_gap(&mut self, gap: f64) {
        self.mean_us = if self.samples == 0 {
            gap
        } else {
            self.mean_us + EWMA_WEIGHT * (gap - self.mean_us)
        };
        self.samples += 1;
    }
}

/// Per-tenant miss penalty estimates.
#[derive(Debug, Default, Clone)]
pub(crate) struct PenaltyTracker {
    tenants: Vec<TenantPenalty>,
}

impl PenaltyTracker {
    fn slot(&mut self, t: usize) -> &mut TenantPenalty {
        if self.tenants.len() <= t {
            self.tenants.resize_with(t + 1, TenantPenalty::default);
        }
        &mut self.tenants[t]
    }

    /// A GET miss of `key_hash` at `now_us`.
    pub(crate) fn miss(&mut self, t: usize, key_hash: u64, now_us: u64) {
        if key_hash >> SAMPLE_SHIFT != 0
            && self.tenants.get(t).is_some_and(|tp| tp.sampled_gaps > 0)
        {
            return;
        }
        let tp = self.slot(t);
        if tp.hint_us.is_some() {
            return;
        }
        if tp.pending.len() >= MAX_PENDING {
            tp.pending
                .retain(|_, at| now_us.saturating_sub(*at) < STALE_US);
            if tp.pending.len() >= MAX_PENDING {
                return;
            }
        }
        tp.pending.entry(key_hash).or_insert(now_us);
    }

    /// A SET of `key_hash` at `now_us`: closes a pending miss.
    pub(crate) fn set(&mut self, t: usize, key_hash: u64, now_us: u64) {
        let sampled = key_hash >> SAMPLE_SHIFT == 0;
        let Some(tp) = self.tenants.get_mut(t) else {
            return;
        };
        if !sampled && tp.sampled_gaps > 0 {
            return;
        }
        if let Some(at) = tp.pending.remove(&key_hash) {
            tp.add_gap(now_us.saturating_sub(at) as f64);
            if sampled {
                tp.sampled_gaps += 1;
                if tp.sampled_gaps == 1 {
                    // From now on only the sample is followed.
                    tp.pending.retain(|k, _| k >> SAMPLE_SHIFT == 0);
                }
            }
        }
    }

    /// A measured gap of pool `t` taken whole (per-key classes measure every key, not a sample);
    /// ignored under a hint.
    pub(crate) fn record(&mut self, t: usize, gap_us: f64) {
        let tp = self.slot(t);
        if tp.hint_us.is_none() {
            tp.add_gap(gap_us);
        }
    }

    /// The operator's penalty for `t` (`None` returns to measuring).
    pub(crate) fn set_hint(&mut self, t: usize, us: Option<f64>) {
        let tp = self.slot(t);
        tp.hint_us = us;
        tp.pending.clear();
    }

    /// (mean penalty µs, measured samples) for `t`: the hint with 0 samples, the measured mean,
    /// or (0, 0) when unknown.
    pub(crate) fn penalty(&self, t: usize) -> (f64, u64) {
        match self.tenants.get(t) {
            Some(TenantPenalty {
                hint_us: Some(h), ..
            }) => (*h, 0),
            Some(tp) => (tp.mean_us, tp.samples),
            None => (0.0, 0),
        }
    }
}

/// Number of pRedis's automatic penalty classes.
pub const PENALTY_CLASSES: u8 = 16;

/// pRedis's automatic penalty class of a miss penalty in µs (section 6.3.1): the ranges
/// `[1, 10), [10, 30), [30, 70), …, [327670, 655350)`, i.e. class `k` starts at `10·(2^k − 1)` µs
/// (class 0 at 1 µs). Penalties below 10 µs are class 0, at or above 327 670 µs class 15.
pub fn penalty_class(us: f64) -> u8 {
    (1..PENALTY_CLASSES)
        .find(|&k| us < 10.0 * ((1u64 << k) - 1) as f64)
        .map_or(PENALTY_CLASSES - 1, |k| k - 1)
}

/// The `[low, high)` range in µs of automatic penalty class `class` (clamped to 0..=15).
pub fn penalty_class_range(class: u8) -> (f64, f64) {
    let k = u64::from(class.min(PENALTY_CLASSES - 1));
    let lo = if k == 0 {
        1.0
    } else {
        10.0 * ((1u64 << k) - 1) as f64
    };
    (lo, 10.0 * ((1u64 << (k + 1)) - 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_between_miss_and_set_is_measured() {
        let mut p = PenaltyTracker::default();
        p.miss(0, 7, 1_000);
        p.set(0, 7, 1_250);
        assert_eq!(p.penalty(0), (250.0, 1));
        p.set(0, 7, 9_999); // no pending miss any more
        assert_eq!(p.penalty(0), (250.0, 1));
        p.miss(0, 8, 2_000);
        p.set(0, 8, 3_250);
        let (mean, n) = p.penalty(0);
        assert_eq!(n, 2);
        assert!((mean - (250.0 + 0.01 * 1000.0)).abs() < 1e-9);
        assert_eq!(p.penalty(3), (0.0, 0));
        p.set_hint(1, Some(1000.0));
        assert_eq!(p.penalty(1), (1000.0, 0));
    }

    /// A key outside the 1/16 sample is followed only until the tenant's first gap on a sampled
    /// key: a tenant of a few unsampled keys is measured (it would never be otherwise), a large
    /// one drops back to the sample, pending unsampled misses included.
    #[test]
    fn unsampled_keys_are_followed_until_a_sampled_gap() {
        let out = |i: u64| (1 << SAMPLE_SHIFT) * (1 + i % 15); // hashes outside the sample
        let mut p = PenaltyTracker::default();
        for round in 0..3u64 {
            for k in 0..3 {
                p.miss(0, out(k), round * 10_000 + k);
                p.set(0, out(k), round * 10_000 + k + 700);
            }
        }
        assert_eq!(p.penalty(0), (700.0, 9), "three unsampled keys measured");
        p.miss(0, out(1), 50_000);
        p.miss(0, 5, 50_000); // in the sample
        p.set(0, 5, 50_300);
        assert_eq!(p.penalty(0).1, 10);
        p.set(0, out(1), 50_900); // its pending miss was dropped
        p.miss(0, out(2), 60_000);
        p.set(0, out(2), 60_100);
        assert_eq!(p.penalty(0).1, 10, "unsampled keys no longer followed");
        p.miss(0, 6, 70_000);
        p.set(0, 6, 70_300);
        assert_eq!(p.penalty(0).1, 11);
    }
}
