//! Objectives, cost curves built from miss-ratio curves, and marginal utility.

use std::fmt;
use std::str::FromStr;

use crate::AllocError;

/// What a partition optimises. Every objective is turned into a cost to MINIMISE, so one solver
/// serves them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objective {
    /// Expected misses per interval: `mr(u) * rate` (mPart eq. 4, LAMA OPT_MISS).
    Misses,
    /// Expected total miss latency: `mr(u) * rate * penalty` (kRedis eq. 4.3, pRedis eq. 9).
    MissLatency,
    /// Hits per second, maximised: cost `-(1 - mr(u)) * rate` (kRedis eq. 4.4).
    HitsPerSecond,
}

impl Objective {
    /// The name [`FromStr`] accepts: `misses`, `latency` or `hits`.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Misses => "misses",
            Objective::MissLatency => "latency",
            Objective::HitsPerSecond => "hits",
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Objective {
    type Err = AllocError;

    /// Parses `misses`, `latency` or `hits` (ASCII case-insensitive, surrounding blanks ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "misses" => Ok(Objective::Misses),
            "latency" => Ok(Objective::MissLatency),
            "hits" => Ok(Objective::HitsPerSecond),
            _ => Err(AllocError::bad(format!(
                "unknown objective {s:?}: expected misses, latency or hits"
            ))),
        }
    }
}

/// The cost curve of one pool for [`solve_dp`](crate::solve_dp), from its miss-ratio curve
/// `miss_ratio[u]` sampled at `u = 0..=n` units:
///
/// ```text
/// Misses:         cost[u] =  mr[u] * rate
/// MissLatency:    cost[u] =  mr[u] * rate * penalty
/// HitsPerSecond:  cost[u] = -(1 - mr[u]) * rate
/// ```
///
/// `rate` is the pool's accesses per interval (or per second: any unit, as long as every pool
/// uses the same one); `penalty` is only read by `MissLatency`. The function does no checking of
/// its own: a NaN or infinite input yields a NaN or infinite cost, which `solve_dp` rejects with
/// [`AllocError::BadInput`] naming the pool and unit (a `+inf` cost is allowed there and means
/// "this size is forbidden").
pub fn miss_cost(
    miss_ratio: &[f64],
    access_rate: f64,
    penalty: f64,
    objective: Objective,
) -> Vec<f64> {
    miss_ratio
        .iter()
        .map(|&mr| match objective {
            Objective::Misses => mr * access_rate,
            Objective::MissLatency => mr * access_rate * penalty,
            Objective::HitsPerSecond => -(1.0 - mr) * access_rate,
        })
        .collect()
}

/// Marginal utility of a pool at `u` units: the cost saved per unit by growing to `u + d`,
/// `(cost[u] - cost[u + d]) / d`. With a miss-count cost this is "hits gained per extra unit",
/// the quantity MemSweeper's victor and Cliffhanger's gradient are built on.
///
/// The curve is taken as flat past its end: when `u + d` runs past the last sample, `d` is
/// shortened to reach the last sample, and when nothing is left (`d == 0`, or `u` at or past the
/// last sample) the utility is `0.0`. NaN costs give NaN.
pub fn marginal_utility(cost: &[f64], u: u64, d: u64) -> f64 {
    let Some(last) = cost.len().checked_sub(1) else {
        return 0.0;
    };
    let last = last as u64;
    if d == 0 || u >= last {
        return 0.0;
    }
    let end = u.saturating_add(d).min(last);
    let step = end - u;
    (cost[u as usize] - cost[end as usize]) / step as f64
}

/// Marginal loss of a pool at `u` units: the cost added per unit by shrinking to `u - d`,
/// `(cost[u - d] - cost[u]) / d` (MemSweeper's victim side, the "main queue" utility). When `u`
/// lies past the curve's end the curve is taken as flat there (the loss of units beyond the last
/// sample is 0); `d` is shortened to stop at 0 units; `d == 0` or `u == 0` gives `0.0`.
pub fn marginal_loss(cost: &[f64], u: u64, d: u64) -> f64 {
    let Some(last) = cost.len().checked_sub(1) else {
        return 0.0;
    };
    let last = last as u64;
    if d == 0 || u == 0 {
        return 0.0;
    }
    let lo = u.saturating_sub(d);
    if lo >= last {
        return 0.0;
    }
    let hi = u.min(last);
    // The units between `last` and `u` (if any) are free to give: count them in the step.
    let step = u - lo;
    (cost[lo as usize] - cost[hi as usize]) / step as f64
}

/// mPart's working-set size of a pool (paper 004, sections 1 and 4.1: the smallest size past
/// which more memory no longer raises the hit ratio): the least `u` with `mr[u] - min(mr[v], v >= u) <= tolerance`,
/// i.e. no larger size lowers the miss ratio by more than `tolerance`.
///
/// # Errors
/// `BadInput` for an empty curve, a NaN or infinite sample, or a negative or NaN tolerance.
pub fn working_set_size(miss_ratio: &[f64], tolerance: f64) -> Result<u64, AllocError> {
    if miss_ratio.is_empty() {
        return Err(AllocError::bad("working_set_size: empty miss-ratio curve"));
    }
    if tolerance.is_nan() || tolerance < 0.0 || tolerance.is_infinite() {
        return Err(AllocError::bad(format!(
            "working_set_size: tolerance {tolerance} must be finite and >= 0"
        )));
    }
    if let Some(u) = miss_ratio.iter().position(|m| !m.is_finite()) {
        return Err(AllocError::bad(format!(
            "working_set_size: miss ratio at {u} units is {}",
            miss_ratio[u]
        )));
    }
    // Walk from the end keeping the suffix minimum; the answer is the smallest u that is flat.
    let mut suffix_min = f64::INFINITY;
    let mut wss = miss_ratio.len() - 1;
    for u in (0..miss_ratio.len()).rev() {
        suffix_min = suffix_min.min(miss_ratio[u]);
        if miss_ratio[u] - suffix_min <= tolerance {
            wss = u;
        }
    }
    Ok(wss as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objective_parses_and_prints() {
        for o in [
            Objective::Misses,
            Objective::MissLatency,
            Objective::HitsPerSecond,
        ] {
            assert_eq!(o.name().parse::<Objective>(), Ok(o));
            assert_eq!(o.to_string(), o.name());
        }
        assert_eq!(" Latency ".parse::<Objective>(), Ok(Objective::MissLatency));
        assert!(matches!(
            "p99".parse::<Objective>(),
            Err(AllocError::BadInput { .. })
        ));
    }

    #[test]
    fn miss_cost_worked_example() {
        // mr = 1.0, 0.5, 0.25 at rate 100/s and penalty 2 ms.
        let mr = [1.0, 0.5, 0.25];
        assert_eq!(
            miss_cost(&mr, 100.0, 2.0, Objective::Misses),
            vec![100.0, 50.0, 25.0]
        );
        assert_eq!(
            miss_cost(&mr, 100.0, 2.0, Objective::MissLatency),
            vec![200.0, 100.0, 50.0]
        );
        assert_eq!(
            miss_cost(&mr, 100.0, 2.0, Objective::HitsPerSecond),
            vec![0.0, -50.0, -75.0]
        );
    }

    #[test]
    fn marginal_utility_and_loss() {
        let c = [100.0, 60.0, 40.0, 30.0];
        assert_eq!(marginal_utility(&c, 0, 1), 40.0);
        assert_eq!(marginal_utility(&c, 0, 2), 30.0);
        assert_eq!(marginal_utility(&c, 2, 5), 10.0); // shortened to the last sample
        assert_eq!(marginal_utility(&c, 3, 1), 0.0); // flat past the end
        assert_eq!(marginal_utility(&c, 1, 0), 0.0);
        assert_eq!(marginal_utility(&[], 0, 1), 0.0);
        assert_eq!(marginal_loss(&c, 1, 1), 40.0);
        assert_eq!(marginal_loss(&c, 3, 2), 15.0);
        assert_eq!(marginal_loss(&c, 2, 9), 30.0); // stops at 0 units
        assert_eq!(marginal_loss(&c, 0, 1), 0.0);
        assert_eq!(marginal_loss(&c, 5, 2), 0.0); // both ends past the curve: flat
        assert_eq!(marginal_loss(&c, 5, 3), 10.0 / 3.0); // 2 -> 5: only 2 -> 3 costs
    }

    #[test]
    fn wss_is_where_the_curve_goes_flat() {
        let mr = [1.0, 0.8, 0.5, 0.3, 0.3, 0.3];
        assert_eq!(working_set_size(&mr, 0.0), Ok(3));
        assert_eq!(working_set_size(&mr, 0.25), Ok(2));
        assert_eq!(working_set_size(&mr, 1.0), Ok(0));
        // A far-off cliff still counts: the curve is not flat until it has dropped.
        let cliff = [1.0, 1.0, 1.0, 1.0, 0.1, 0.1];
        assert_eq!(working_set_size(&cliff, 0.01), Ok(4));
        assert!(working_set_size(&[], 0.0).is_err());
        assert!(working_set_size(&[1.0, f64::NAN], 0.0).is_err());
        assert!(working_set_size(&[1.0], -1.0).is_err());
    }
}
