//! LAMA's QoS partition (paper 002, section 4, Algorithm 2): find the least memory that meets a
//! pool's hit-ratio requirement, reserve it, then split the rest optimally with the DP.
//!
//! The paper partitions at two levels: applications first (for QoS), then each application's
//! memory among its size classes (Algorithm 1). [`group_cost`] gives the first level its
//! curves: an application's least cost at every size, its classes split optimally.

use crate::AllocError;
use crate::dp::{Allocation, DpProblem, solve_dp, validate};

/// The least `u` with `hit_ratio[u] >= floor`, or `None` when no sample reaches it (or `floor`
/// is NaN). A linear scan, so it is exact even when the curve is not monotone; on a
/// non-decreasing curve it equals LAMA's binary search.
pub fn least_units_for_hit_ratio(hit_ratio: &[f64], floor: f64) -> Option<u64> {
    hit_ratio.iter().position(|&h| h >= floor).map(|u| u as u64)
}

/// LAMA QoS: every pool `i` first gets `L_i`, the least units at which `hit_ratios[i]` reaches
/// `floors[i]` (a floor of 0 asks for nothing); then [`solve_dp`] splits the rest of `p.total`
/// with `max(p.floors[i], L_i)` as the floors. `hit_ratios[i][u]` is pool `i`'s hit ratio at `u`
/// units, on the same unit grid as `p.costs[i]`.
///
/// With a move radius (`p.current` and `p.max_move`) a floor out of reach this interval is
/// approached as far as the radius allows: the QoS floor becomes `min(L_i, current_i +
/// max_move)`, so repeated calls converge to it.
///
/// The result meets every floor when the hit-ratio curves are non-decreasing in `u` (the DP may
/// give a pool more than `L_i`); on a non-monotone curve only `u_i >= L_i` is guaranteed.
///
/// # Errors
/// `BadInput`: everything [`solve_dp`] rejects, `hit_ratios`/`floors` not one per pool, a floor
/// outside `[0, 1]` or NaN, a NaN or infinite hit ratio. `Infeasible`: a pool never reaches its
/// floor, needs more than its cap, or the QoS reservations exceed `total`; plus whatever
/// `solve_dp` finds infeasible.
pub fn qos_partition(
    p: &DpProblem,
    hit_ratios: &[Vec<f64>],
    floors: &[f64],
) -> Result<Allocation, AllocError> {
    validate(p)?;
    let n = p.costs.len();
    if hit_ratios.len() != n || floors.len() != n {
        return Err(AllocError::bad(format!(
            "qos_partition: {} hit-ratio curves and {} floors for {n} pools",
            hit_ratios.len(),
            floors.len()
        )));
    }
    let mut raised = p.floors.clone();
    raised.resize(n, 0);
    let mut reserved: u128 = 0;
    for i in 0..n {
        let f = floors[i];
        if f.is_nan() || !(0.0..=1.0).contains(&f) {
            return Err(AllocError::bad(format!(
                "pool {i}: hit-ratio floor {f} is outside [0, 1]"
            )));
        }
        if let Some(u) = hit_ratios[i].iter().position(|h| !h.is_finite()) {
            return Err(AllocError::bad(format!(
                "pool {i}: hit ratio at {u} units is {}",
                hit_ratios[i][u]
            )));
        }
        let need = least_units_for_hit_ratio(&hit_ratios[i], f).ok_or_else(|| {
            let best = hit_ratios[i]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            AllocError::infeasible(format!(
                "pool {i}: hit ratio never reaches {f} (best {best} over {} samples)",
                hit_ratios[i].len()
            ))
        })?;
        let need = match (&p.current, p.max_move) {
            (Some(cur), Some(r)) => need.min(cur[i].saturating_add(r)),
            _ => need,
        };
        if let Some(Some(cap)) = p.caps.get(i)
            && need > *cap
        {
            return Err(AllocError::infeasible(format!(
                "pool {i}: needs {need} units for hit ratio {f}, above its cap {cap}"
            )));
        }
        raised[i] = raised[i].max(need);
        reserved += u128::from(raised[i]);
    }
    if reserved > u128::from(p.total) {
        return Err(AllocError::infeasible(format!(
            "QoS floors and floors reserve {reserved} units, more than the total {}",
            p.total
        )));
    }
    solve_dp(&DpProblem {
        floors: raised,
        ..p.clone()
    })
}

/// The least summed cost of a group of curves at every budget: `out[b] = min sum_k
/// costs[k][u_k]` over `u_1 + ... + u_n <= b`, for `b = 0..=total` (a min-plus convolution;
/// a curve is taken as flat past its end). With no curves every budget costs 0. Time
/// `O(n * total * len)`: the caller picks a unit that keeps it small.
///
/// # Errors
/// `BadInput`: an empty curve, a NaN or `-inf` cost, or `n * (total + 1)` above
/// [`MAX_DP_CELLS`](crate::MAX_DP_CELLS).
pub fn group_cost(costs: &[Vec<f64>], total: u64) -> Result<Vec<f64>, AllocError> {
    let cells = (costs.len() as u128) * (u128::from(total) + 1);
    if cells > u128::from(crate::MAX_DP_CELLS) {
        return Err(AllocError::bad(format!(
            "group_cost: {} curves x {total} units is above the limit",
            costs.len()
        )));
    }
    let mut acc = vec![0.0; total as usize + 1];
    for (i, c) in costs.iter().enumerate() {
        if c.is_empty() {
            return Err(AllocError::bad(format!("group_cost: curve {i} is empty")));
        }
        if let Some(u) = c.iter().position(|x| x.is_nan() || *x == f64::NEG_INFINITY) {
            return Err(AllocError::bad(format!(
                "group_cost: curve {i} costs {} at {u} units",
                c[u]
            )));
        }
        let next: Vec<f64> = (0..acc.len())
            .map(|b| {
                (0..=b.min(c.len() - 1))
                    .map(|k| c[k] + acc[b - k])
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        acc = next;
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Objective, miss_cost};

    #[test]
    fn group_cost_is_the_dp_optimum_at_every_budget() {
        let a = vec![10.0, 6.0, 5.0, 5.0];
        let b = vec![8.0, 8.0, 1.0];
        let c = vec![3.0, 2.0];
        let g = group_cost(&[a.clone(), b.clone(), c.clone()], 6).unwrap();
        for (t, &cost) in g.iter().enumerate() {
            let p = DpProblem {
                costs: vec![a.clone(), b.clone(), c.clone()],
                total: t as u64,
                ..DpProblem::default()
            };
            let best = solve_dp(&p).unwrap().cost;
            assert!((cost - best).abs() < 1e-9, "budget {t}: {cost} vs {best}");
        }
        // b's cliff at 2 units is taken over a's steady gains once it fits.
        assert_eq!(g[2], 10.0 + 1.0 + 3.0);
        assert_eq!(group_cost(&[], 3).unwrap(), vec![0.0; 4]);
        assert!(group_cost(&[vec![]], 3).is_err());
        assert!(group_cost(&[vec![f64::NAN]], 3).is_err());
        assert!(group_cost(&vec![vec![0.0]; 2], crate::MAX_DP_CELLS).is_err());
    }

    #[test]
    fn least_units() {
        let h = [0.0, 0.3, 0.6, 0.8, 0.9];
        assert_eq!(least_units_for_hit_ratio(&h, 0.0), Some(0));
        assert_eq!(least_units_for_hit_ratio(&h, 0.6), Some(2));
        assert_eq!(least_units_for_hit_ratio(&h, 0.85), Some(4));
        assert_eq!(least_units_for_hit_ratio(&h, 0.95), None);
        assert_eq!(least_units_for_hit_ratio(&h, f64::NAN), None);
        assert_eq!(least_units_for_hit_ratio(&[], 0.0), None);
    }

    #[test]
    fn qos_worked_example() {
        // Pool 0 is critical (hit ratio >= 0.8 needs 3 units) but has a low access rate; pool 1
        // gains more per unit. Without QoS the DP starves pool 0.
        let h0 = vec![0.0, 0.4, 0.7, 0.8, 0.85, 0.9];
        let h1 = vec![0.0, 0.5, 0.8, 0.9, 0.95, 1.0];
        let mr = |h: &Vec<f64>| h.iter().map(|x| 1.0 - x).collect::<Vec<_>>();
        let p = DpProblem {
            costs: vec![
                miss_cost(&mr(&h0), 10.0, 0.0, Objective::Misses),
                miss_cost(&mr(&h1), 100.0, 0.0, Objective::Misses),
            ],
            total: 5,
            ..DpProblem::default()
        };
        let free = solve_dp(&p).unwrap();
        assert_eq!(free.units, vec![0, 5]);
        let q = qos_partition(&p, &[h0.clone(), h1.clone()], &[0.8, 0.0]).unwrap();
        assert_eq!(q.units, vec![3, 2]);
        // The floor is approached 1 unit per interval from [0, 5].
        let moving = DpProblem {
            current: Some(vec![0, 5]),
            max_move: Some(1),
            ..p.clone()
        };
        let q = qos_partition(&moving, &[h0.clone(), h1.clone()], &[0.8, 0.0]).unwrap();
        assert_eq!(q.units, vec![1, 4]);
        // Unreachable and oversized requirements.
        assert!(matches!(
            qos_partition(&p, &[h0.clone(), h1.clone()], &[0.95, 0.0]),
            Err(AllocError::Infeasible { .. })
        ));
        assert!(matches!(
            qos_partition(&p, &[h0.clone(), h1.clone()], &[0.8, 0.9]),
            Err(AllocError::Infeasible { .. })
        ));
        let capped = DpProblem {
            caps: vec![Some(2), None],
            ..p.clone()
        };
        assert!(matches!(
            qos_partition(&capped, &[h0.clone(), h1.clone()], &[0.8, 0.0]),
            Err(AllocError::Infeasible { .. })
        ));
        // Malformed.
        for bad in [
            qos_partition(&p, std::slice::from_ref(&h0), &[0.8, 0.0]),
            qos_partition(&p, &[h0.clone(), h1.clone()], &[0.8]),
            qos_partition(&p, &[h0.clone(), h1.clone()], &[1.5, 0.0]),
            qos_partition(&p, &[h0.clone(), h1.clone()], &[f64::NAN, 0.0]),
            qos_partition(&p, &[vec![0.0, f64::NAN], h1.clone()], &[0.0, 0.0]),
        ] {
            assert!(matches!(bad, Err(AllocError::BadInput { .. })), "{bad:?}");
        }
    }
}
