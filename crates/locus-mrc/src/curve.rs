//! The [`Mrc`] type: a miss ratio curve with its capacity unit and miss-ratio metric in the type,
//! linear interpolation, merge-by-minimum (kRedis's mMRC, with the argmin recorded) and error metrics.

use crate::MrcError;
use serde::Serialize;
use std::fmt;

/// The unit of a curve's capacity axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Capacity counts objects (every object costs 1).
    Objects,
    /// Capacity counts bytes (every object costs its size).
    Bytes,
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Objects => "objects",
            Unit::Bytes => "bytes",
        })
    }
}

/// What a miss ratio counts (docs/models.md §0.2: the two are different curves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Missed GET requests / GET requests.
    #[default]
    Requests,
    /// Bytes of missed GETs / bytes of GETs.
    Bytes,
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Metric::Requests => "requests",
            Metric::Bytes => "bytes",
        })
    }
}

/// A miss ratio curve: `(capacity, miss_ratio)` points with strictly increasing capacities.
///
/// Between points the curve is linear; below the first point it is interpolated from `(0, 1)`
/// (an empty cache misses everything); beyond the last point it stays at the last value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mrc {
    unit: Unit,
    metric: Metric,
    points: Vec<(f64, f64)>,
}

/// Mean and worst absolute difference between two curves over a set of capacities.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorStats {
    /// Mean absolute error (the SHARDS/DLRU/pRedis metric).
    pub mae: f64,
    /// Largest absolute error at one capacity.
    pub max: f64,
    /// Capacity where the largest error occurs.
    pub max_at: f64,
}

impl Mrc {
    /// A curve from points. Miss ratios are clamped to `[0, 1]`.
    ///
    /// # Errors
    /// [`MrcError::InvalidCurve`] if a value is not finite, a capacity is negative, or capacities are
    /// not strictly increasing.
    pub fn new(unit: Unit, metric: Metric, points: Vec<(f64, f64)>) -> Result<Self, MrcError> {
        let mut out = Vec::with_capacity(points.len());
        let mut prev = f64::NEG_INFINITY;
        for (c, m) in points {
            if !c.is_finite() || !m.is_finite() {
                return Err(MrcError::InvalidCurve {
                    reason: format!("non-finite point ({c}, {m})"),
                });
            }
            if c < 0.0 {
                return Err(MrcError::InvalidCurve {
                    reason: format!("negative capacity {c}"),
                });
            }
            if c <= prev {
                return Err(MrcError::InvalidCurve {
                    reason: format!("capacities not strictly increasing at {c}"),
                });
            }
            prev = c;
            out.push((c, m.clamp(0.0, 1.0)));
        }
        Ok(Self {
            unit,
            metric,
            points: out,
        })
    }

    /// The capacity unit.
    pub fn unit(&self) -> Unit {
        self.unit
    }

    /// The miss-ratio metric.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The points, capacities increasing.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// The capacities of the points.
    pub fn capacities(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.0).collect()
    }

    /// The miss ratio at capacity `c`, linearly interpolated (see the type's doc for the ends).
    pub fn miss_ratio(&self, c: f64) -> f64 {
        let p = &self.points;
        if p.is_empty() || c <= 0.0 {
            return 1.0;
        }
        self.interpolate(p.partition_point(|&(x, _)| x < c), c)
    }

    /// The miss ratio at `c > 0` given `i`, the number of points below `c`.
    #[inline]
    fn interpolate(&self, i: usize, c: f64) -> f64 {
        let p = &self.points;
        if i < p.len() && p[i].0 == c {
            return p[i].1;
        }
        let (x0, y0) = if i == 0 { (0.0, 1.0) } else { p[i - 1] };
        if i == p.len() {
            return y0;
        }
        let (x1, y1) = p[i];
        y0 + (y1 - y0) * (c - x0) / (x1 - x0)
    }

    /// [`Mrc::miss_ratio`] at every capacity of `caps`, which must be ascending (the answers are
    /// the same, one walk along the curve instead of a search per capacity).
    pub fn miss_ratios(&self, caps: &[f64]) -> Vec<f64> {
        debug_assert!(caps.windows(2).all(|w| w[0] <= w[1]), "caps ascending");
        let p = &self.points;
        let mut i = 0;
        caps.iter()
            .map(|&c| {
                if p.is_empty() || c <= 0.0 {
                    return 1.0;
                }
                while i < p.len() && p[i].0 < c {
                    i += 1;
                }
                self.interpolate(i, c)
            })
            .collect()
    }

    /// The smallest capacity whose (interpolated) miss ratio is at most `target`, or `None` if the
    /// curve never gets that low. Useful for "how much memory for a 95% hit ratio".
    pub fn capacity_for(&self, target: f64) -> Option<f64> {
        let mut prev = (0.0, 1.0);
        if target >= 1.0 {
            return Some(0.0);
        }
        for &(c, m) in &self.points {
            if m <= target {
                let (x0, y0) = prev;
                if y0 <= m {
                    return Some(c);
                }
                return Some(x0 + (c - x0) * (y0 - target) / (y0 - m));
            }
            prev = (c, m);
        }
        None
    }

    /// Error of `self` (the prediction) against `truth`, evaluated at `capacities` (or, if empty,
    /// at `truth`'s own capacities).
    ///
    /// # Errors
    /// [`MrcError::Mismatch`] if the units or metrics differ; [`MrcError::Empty`] if there is
    /// nothing to evaluate.
    pub fn error_vs(&self, truth: &Mrc, capacities: &[f64]) -> Result<ErrorStats, MrcError> {
        self.check_same_kind(truth)?;
        let own;
        let caps = if capacities.is_empty() {
            own = truth.capacities();
            &own[..]
        } else {
            capacities
        };
        if caps.is_empty() {
            return Err(MrcError::Empty {
                what: "capacities to compare at".into(),
            });
        }
        let mut sum = 0.0;
        let mut max = -1.0;
        let mut max_at = 0.0;
        for &c in caps {
            let e = (self.miss_ratio(c) - truth.miss_ratio(c)).abs();
            sum += e;
            if e > max {
                max = e;
                max_at = c;
            }
        }
        Ok(ErrorStats {
            mae: sum / caps.len() as f64,
            max,
            max_at,
        })
    }

    /// Mean absolute error against `truth` at `truth`'s capacities (shorthand for [`Mrc::error_vs`]).
    ///
    /// # Errors
    /// As [`Mrc::error_vs`].
    pub fn mae(&self, truth: &Mrc) -> Result<f64, MrcError> {
        Ok(self.error_vs(truth, &[])?.mae)
    }

    fn check_same_kind(&self, other: &Mrc) -> Result<(), MrcError> {
        if self.unit != other.unit || self.metric != other.metric {
            return Err(MrcError::Mismatch {
                left: format!("{} / {}", self.unit, self.metric),
                right: format!("{} / {}", other.unit, other.metric),
            });
        }
        Ok(())
    }

    /// kRedis's merged curve: at every capacity of any input curve, the minimum miss ratio over
    /// the curves, and which curve (by its `label`, e.g. K) achieved it. Ties go to the first.
    ///
    /// # Errors
    /// [`MrcError::Empty`] for no curves; [`MrcError::Mismatch`] if units or metrics differ.
    pub fn merge_min(curves: &[(u32, &Mrc)]) -> Result<MergedMrc, MrcError> {
        let Some(&(_, first)) = curves.first() else {
            return Err(MrcError::Empty {
                what: "curves to merge".into(),
            });
        };
        for (_, c) in curves {
            first.check_same_kind(c)?;
        }
        // The union of the capacities (the common case: every curve has the same ones).
        let same = curves.iter().all(|(_, c)| {
            c.points.len() == first.points.len()
                && c.points.iter().zip(&first.points).all(|(a, b)| a.0 == b.0)
        });
        let caps: Vec<f64> = if same {
            first.capacities()
        } else {
            let mut caps: Vec<f64> = curves
                .iter()
                .flat_map(|(_, c)| c.points.iter().map(|p| p.0))
                .collect();
            caps.sort_by(f64::total_cmp);
            caps.dedup();
            caps
        };
        let at: Vec<Vec<f64>> = curves.iter().map(|(_, c)| c.miss_ratios(&caps)).collect();
        let mut points = Vec::with_capacity(caps.len());
        let mut argmin = Vec::with_capacity(caps.len());
        for (j, c) in caps.into_iter().enumerate() {
            let mut best = (curves[0].0, f64::INFINITY);
            for (&(label, _), m) in curves.iter().zip(&at) {
                if m[j] < best.1 {
                    best = (label, m[j]);
                }
            }
            points.push((c, best.1));
            argmin.push(best.0);
        }
        Ok(MergedMrc {
            mrc: Mrc::new(first.unit, first.metric, points)?,
            argmin,
        })
    }
}

/// The result of [`Mrc::merge_min`]: the minimum curve and, per point, the label that achieved it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergedMrc {
    /// The pointwise-minimum curve.
    pub mrc: Mrc,
    /// For each point of `mrc`, the label of the curve that had the minimum there.
    pub argmin: Vec<u32>,
}

impl MergedMrc {
    /// The label that minimises the miss ratio at capacity `c` (the nearest point at or below `c`,
    /// or the first point).
    pub fn best_label_at(&self, c: f64) -> Option<u32> {
        let p = self.mrc.points();
        if p.is_empty() {
            return None;
        }
        let i = p.partition_point(|&(x, _)| x <= c);
        Some(self.argmin[i.saturating_sub(1)])
    }
}

/// `n` capacities evenly spaced on `(0, max]`: `max/n, 2·max/n, …, max`, rounded to whole objects
/// or bytes (duplicates removed).
pub fn even_capacities(max: f64, n: usize) -> Vec<f64> {
    if n == 0 || max <= 0.0 || !max.is_finite() {
        return Vec::new();
    }
    let mut v: Vec<f64> = (1..=n)
        .map(|i| (max * i as f64 / n as f64).round().max(1.0))
        .collect();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(p: &[(f64, f64)]) -> Mrc {
        Mrc::new(Unit::Objects, Metric::Requests, p.to_vec()).unwrap()
    }

    #[test]
    fn miss_ratios_walk_equals_each_search() {
        let m = curve(&[(2.0, 0.5), (4.0, 0.1), (7.5, 0.05), (9.0, 0.0)]);
        let caps = [-1.0, 0.0, 0.5, 2.0, 2.0, 3.0, 4.0, 5.0, 7.5, 8.0, 9.0, 50.0];
        let walk = m.miss_ratios(&caps);
        for (c, w) in caps.iter().zip(&walk) {
            assert_eq!(w.to_bits(), m.miss_ratio(*c).to_bits(), "at {c}");
        }
        let empty = Mrc::new(Unit::Objects, Metric::Requests, vec![]).unwrap();
        assert_eq!(empty.miss_ratios(&[0.0, 1.0]), vec![1.0, 1.0]);
    }

    #[test]
    fn merge_min_same_or_different_capacities() {
        // Same capacities (the fast path) and different ones (the union) give the pointwise
        // minimum computed by searching each curve, with ties to the first curve.
        let a = curve(&[(1.0, 0.9), (2.0, 0.5), (3.0, 0.4)]);
        let b = curve(&[(1.0, 0.8), (2.0, 0.5), (3.0, 0.45)]);
        let c = curve(&[(1.5, 0.7), (3.0, 0.3)]);
        for set in [vec![(1, &a), (5, &b)], vec![(1, &a), (5, &b), (8, &c)]] {
            let mm = Mrc::merge_min(&set).unwrap();
            for (j, &(x, y)) in mm.mrc.points().iter().enumerate() {
                let (mut bl, mut bm) = (set[0].0, f64::INFINITY);
                for &(l, cv) in &set {
                    if cv.miss_ratio(x) < bm {
                        (bl, bm) = (l, cv.miss_ratio(x));
                    }
                }
                assert_eq!((y, mm.argmin[j]), (bm, bl), "at {x}");
            }
        }
        let two = Mrc::merge_min(&[(1, &a), (5, &b)]).unwrap();
        assert_eq!(two.argmin, vec![5, 1, 1]);
    }

    #[test]
    fn interpolation_and_ends() {
        let m = curve(&[(2.0, 0.5), (4.0, 0.1)]);
        assert_eq!(m.miss_ratio(0.0), 1.0);
        assert!((m.miss_ratio(1.0) - 0.75).abs() < 1e-12);
        assert!((m.miss_ratio(3.0) - 0.3).abs() < 1e-12);
        assert_eq!(m.miss_ratio(4.0), 0.1);
        assert_eq!(m.miss_ratio(100.0), 0.1);
        assert_eq!(m.capacity_for(0.1), Some(4.0));
        assert!((m.capacity_for(0.3).unwrap() - 3.0).abs() < 1e-12);
        assert_eq!(m.capacity_for(0.05), None);
    }

    #[test]
    fn rejects_bad_points_and_clamps() {
        assert!(Mrc::new(Unit::Bytes, Metric::Requests, vec![(2.0, 0.5), (2.0, 0.4)]).is_err());
        assert!(Mrc::new(Unit::Bytes, Metric::Requests, vec![(-1.0, 0.5)]).is_err());
        assert!(Mrc::new(Unit::Bytes, Metric::Requests, vec![(1.0, f64::NAN)]).is_err());
        let m = Mrc::new(Unit::Bytes, Metric::Requests, vec![(1.0, 1.2), (2.0, -0.1)]).unwrap();
        assert_eq!(m.points(), &[(1.0, 1.0), (2.0, 0.0)]);
    }

    #[test]
    fn merge_records_argmin_and_mae() {
        let a = curve(&[(1.0, 0.9), (2.0, 0.5), (3.0, 0.4)]);
        let b = curve(&[(1.0, 0.8), (2.0, 0.6), (3.0, 0.1)]);
        let m = Mrc::merge_min(&[(1, &a), (5, &b)]).unwrap();
        assert_eq!(m.mrc.points(), &[(1.0, 0.8), (2.0, 0.5), (3.0, 0.1)]);
        assert_eq!(m.argmin, vec![5, 1, 5]);
        assert_eq!(m.best_label_at(2.5), Some(1));
        let e = a.error_vs(&b, &[]).unwrap();
        assert!((e.mae - (0.1 + 0.1 + 0.3) / 3.0).abs() < 1e-12);
        assert!((e.max - 0.3).abs() < 1e-12);
        assert_eq!(e.max_at, 3.0);
        let bytes = Mrc::new(Unit::Bytes, Metric::Requests, vec![(1.0, 0.5)]).unwrap();
        assert!(matches!(a.mae(&bytes), Err(MrcError::Mismatch { .. })));
        assert!(Mrc::merge_min(&[]).is_err());
    }

    #[test]
    fn even_capacities_cover_the_range() {
        assert_eq!(even_capacities(10.0, 5), vec![2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(even_capacities(3.0, 10), vec![1.0, 2.0, 3.0]);
        assert!(even_capacities(0.0, 10).is_empty());
    }
}
