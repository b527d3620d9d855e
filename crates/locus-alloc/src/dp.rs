//! The partition DP shared by kRedis, pRedis, mPart and LAMA.
//!
//! Problem (units are abstract; the caller picks the granularity):
//!
//! ```text
//! minimise   sum_i cost_i[u_i]
//! subject to sum_i u_i <= total
//!            lo_i <= u_i <= hi_i
//!   lo_i = max(floor_i, current_i - max_move)          (radius only with current + max_move)
//!   hi_i = min(cap_i, len(cost_i) - 1, current_i + max_move)
//! ```
//!
//! Solved over suffixes of the pool list, `G[i][j]` = best key of pools `i..n` with at most `j`
//! units above their lower bounds (`v_i = u_i - lo_i`, `B = min(total, sum hi) - sum lo`):
//!
//! ```text
//! G[n][j] = 0                                               for j = 0..=B
//! G[i][j] = min over k = 0..=min(hi_i - lo_i, j) of  cost_i[lo_i + k] + G[i+1][j - k]
//! answer  = G[0][B], read forward: pool 0 takes the largest optimal k, then pool 1, ...
//! ```
//!
//! "At most" makes `G[i]` non-increasing in `j`, so the solver may leave units unspent when a
//! curve rises; with non-increasing curves it spends `min(total, sum hi)`, the papers' `sum = M`.
//! Time `O(n * B * max span) <= O(n * total^2)`, memory `O(n * B)`.

use crate::AllocError;

/// Upper bound on `pools * (budget + 1)` DP cells (each 28 bytes), about 120 MB.
pub const MAX_DP_CELLS: u64 = 1 << 22;

/// One partition problem for [`solve_dp`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DpProblem {
    /// `costs[i][u]`: cost of pool `i` holding `u` units (lower is better), `u = 0..len`. A curve
    /// may be longer than `total`; a pool never gets more units than its curve covers. `+inf`
    /// marks a forbidden size; NaN and `-inf` are rejected.
    pub costs: Vec<Vec<f64>>,
    /// Units to share (the solver may spend less, see the tie rule).
    pub total: u64,
    /// Least units per pool; empty means all 0.
    pub floors: Vec<u64>,
    /// Most units per pool; empty means none.
    pub caps: Vec<Option<u64>>,
    /// The allocation in force, for the move radius and the "fewest moves" tie break.
    pub current: Option<Vec<u64>>,
    /// At most this many units gained or lost per pool this interval (needs `current`).
    pub max_move: Option<u64>,
}

/// A solver's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// Units per pool, in pool order.
    pub units: Vec<u64>,
    /// `sum_i cost_i[units_i]`, summed from the last pool to the first.
    pub cost: f64,
}

/// The bounds of one pool after validation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Range {
    lo: u64,
    hi: u64,
}

/// Checks `p` and computes each pool's `[lo, hi]`.
pub(crate) fn validate(p: &DpProblem) -> Result<Vec<Range>, AllocError> {
    let n = p.costs.len();
    if !p.floors.is_empty() && p.floors.len() != n {
        return Err(AllocError::bad(format!(
            "{} floors for {n} pools (give one per pool or none)",
            p.floors.len()
        )));
    }
    if !p.caps.is_empty() && p.caps.len() != n {
        return Err(AllocError::bad(format!(
            "{} caps for {n} pools (give one per pool or none)",
            p.caps.len()
        )));
    }
    if let Some(cur) = &p.current
        && cur.len() != n
    {
        return Err(AllocError::bad(format!(
            "current allocation has {} entries for {n} pools",
            cur.len()
        )));
    }
    if p.max_move.is_some() && p.current.is_none() {
        return Err(AllocError::bad(
            "max_move given without the current allocation to measure moves from",
        ));
    }
    let mut floor_sum: u128 = 0;
    let mut ranges = Vec::with_capacity(n);
    // Malformed input is reported before infeasibility, whichever pool comes first.
    let mut infeasible = None;
    for (i, curve) in p.costs.iter().enumerate() {
        if curve.is_empty() {
            return Err(AllocError::bad(format!("pool {i}: empty cost curve")));
        }
        if let Some(u) = curve
            .iter()
            .position(|c| c.is_nan() || *c == f64::NEG_INFINITY)
        {
            return Err(AllocError::bad(format!(
                "pool {i}: cost at {u} units is {}",
                curve[u]
            )));
        }
        let floor = p.floors.get(i).copied().unwrap_or(0);
        let cap = p.caps.get(i).copied().flatten();
        if let Some(cap) = cap
            && floor > cap
        {
            return Err(AllocError::bad(format!(
                "pool {i}: floor {floor} is above cap {cap}"
            )));
        }
        floor_sum += u128::from(floor);
        let last = (curve.len() - 1) as u64;
        if floor > last {
            infeasible.get_or_insert_with(|| {
                AllocError::infeasible(format!(
                    "pool {i}: floor {floor} is beyond its cost curve (0..={last} units)"
                ))
            });
        }
        let mut lo = floor;
        let mut hi = cap.map_or(last, |c| c.min(last));
        if let (Some(cur), Some(r)) = (&p.current, p.max_move) {
            let c = cur[i];
            lo = lo.max(c.saturating_sub(r));
            hi = hi.min(c.saturating_add(r));
            if lo > hi {
                infeasible.get_or_insert_with(|| {
                    AllocError::infeasible(format!(
                        "pool {i}: holds {c} units and may move at most {r}, which cannot reach \
                         [{floor}, {}] (floor, min(cap, curve end))",
                        cap.map_or(last, |c| c.min(last))
                    ))
                });
            }
        }
        ranges.push(Range { lo, hi });
    }
    if floor_sum > u128::from(p.total) {
        return Err(AllocError::bad(format!(
            "floors add up to {floor_sum} units, more than the total {}",
            p.total
        )));
    }
    if let Some(e) = infeasible {
        return Err(e);
    }
    let lo_sum: u128 = ranges.iter().map(|r| u128::from(r.lo)).sum();
    if lo_sum > u128::from(p.total) {
        return Err(AllocError::infeasible(format!(
            "with the move radius the pools need at least {lo_sum} units, more than the total {}",
            p.total
        )));
    }
    Ok(ranges)
}

/// Solves the partition problem exactly (see the module docs for the recurrence).
///
/// Tie rule, applied in order among allocations of equal cost:
/// 1. more units spent in total (idle memory helps nobody);
/// 2. fewer units moved, `sum_i |u_i - current_i|` (only with `current`);
/// 3. lexicographically larger `(u_0, u_1, ...)`: lower pool ids get the spare units.
///
/// Costs tie when their sums are bit-for-bit equal (sums run from the last pool to the first);
/// integer-valued costs, and flat stretches of any curve, tie exactly. Zero pools give an empty
/// allocation of cost 0.
///
/// # Errors
/// `BadInput`: lengths of `floors`/`caps`/`current` differ from the pool count, `max_move`
/// without `current`, an empty curve, a NaN or `-inf` cost, a floor above its cap, floors that
/// add up to more than `total`, or a problem larger than [`MAX_DP_CELLS`].
/// `Infeasible`: a floor beyond its curve, a move radius that cannot reach `[floor, cap]` or
/// needs more than `total` in all, or every allowed allocation has an infinite cost.
pub fn solve_dp(p: &DpProblem) -> Result<Allocation, AllocError> {
    let ranges = validate(p)?;
    let n = ranges.len();
    let lo_sum: u64 = ranges.iter().map(|r| r.lo).sum();
    let hi_sum: u128 = ranges.iter().map(|r| u128::from(r.hi)).sum();
    // Budget above the lower bounds; never more than the pools can hold.
    let budget = (u128::from(p.total).min(hi_sum) - u128::from(lo_sum)) as u64;
    let cells = (n as u128) * (u128::from(budget) + 1);
    if cells > u128::from(MAX_DP_CELLS) {
        return Err(AllocError::bad(format!(
            "{n} pools x {budget} units is {cells} DP cells, above the limit {MAX_DP_CELLS}: \
             use a coarser unit"
        )));
    }
    let width = budget as usize + 1;
    if n == 0 {
        return Ok(Allocation {
            units: vec![],
            cost: 0.0,
        });
    }

    // Suffix rows: row i holds the best key of pools i..n for every budget 0..=B; row n is all
    // zeros. Row 0 is only read at j = B, so it is computed as that one cell. The last pool's
    // row is a running best over k (its next row is zero), O(B) instead of O(B^2).
    let mut cost = vec![0.0_f64; (n + 1) * width];
    let mut used = vec![0_u64; (n + 1) * width];
    let mut moved = vec![0_u64; (n + 1) * width];
    let mut choice = vec![0_u32; n * width];
    // The next row reversed, so that `curve[k] + next[j - k]` reads both slices forwards.
    let mut next_rev: Vec<f64> = Vec::with_capacity(width);
    let pool = |i: usize| {
        let Range { lo, hi } = ranges[i];
        let curve = &p.costs[i][lo as usize..=hi as usize];
        let cur = p.current.as_ref().map(|c| c[i]);
        (curve, move |k: usize| {
            cur.map_or(0, |c| (lo + k as u64).abs_diff(c))
        })
    };

    for i in (1..n).rev() {
        let (curve, move_of) = pool(i);
        let (head, tail) = cost.split_at_mut((i + 1) * width);
        let (row, next) = (&mut head[i * width..], &tail[..width]);
        let (uhead, utail) = used.split_at_mut((i + 1) * width);
        let (urow, unext) = (&mut uhead[i * width..], &utail[..width]);
        let (mhead, mtail) = moved.split_at_mut((i + 1) * width);
        let (mrow, mnext) = (&mut mhead[i * width..], &mtail[..width]);
        let crow = &mut choice[i * width..(i + 1) * width];
        if i == n - 1 {
            for j in 0..width {
                let take = j < curve.len()
                    && (j == 0 || {
                        let (c, u, m) = (curve[j] + 0.0, j as u64, move_of(j));
                        better_or_equal((c, u, m), (row[j - 1], urow[j - 1], mrow[j - 1]))
                    });
                if take {
                    (row[j], urow[j], mrow[j], crow[j]) =
                        (curve[j] + 0.0, j as u64, move_of(j), j as u32);
                } else {
                    (row[j], urow[j], mrow[j], crow[j]) =
                        (row[j - 1], urow[j - 1], mrow[j - 1], crow[j - 1]);
                }
            }
        } else {
            next_rev.clear();
            next_rev.extend(next.iter().rev());
            let cells = Cells {
                curve,
                next_rev: &next_rev,
                next_used: unext,
                next_moved: mnext,
                move_of: &move_of,
            };
            cells.fill_row(row, urow, mrow, crow);
        }
    }
    let (curve0, move_of0) = pool(0);
    next_rev.clear();
    next_rev.extend(cost[width..2 * width].iter().rev());
    let (total_cost, _, _, k0) = Cells {
        curve: curve0,
        next_rev: &next_rev,
        next_used: &used[width..2 * width],
        next_moved: &moved[width..2 * width],
        move_of: &move_of0,
    }
    .best(budget as usize);
    if total_cost == f64::INFINITY {
        return Err(AllocError::infeasible(
            "every allocation within the bounds has an infinite cost (or the sum overflows f64)",
        ));
    }
    let mut units = Vec::with_capacity(n);
    units.push(ranges[0].lo + k0 as u64);
    let mut left = budget as usize - k0;
    for (i, r) in ranges.iter().enumerate().skip(1) {
        let k = choice[i * width + left] as usize;
        units.push(r.lo + k as u64);
        left -= k;
    }
    Ok(Allocation {
        units,
        cost: total_cost,
    })
}

/// The tie rule on keys `(cost, units, moves)`: lower cost, then more units, then fewer moves;
/// a full tie counts as "better or equal" so the caller keeps the later (larger) choice.
#[inline]
fn better_or_equal(new: (f64, u64, u64), old: (f64, u64, u64)) -> bool {
    new.0 < old.0 || (new.0 == old.0 && (new.1 > old.1 || (new.1 == old.1 && new.2 <= old.2)))
}

/// Chunk width of the DP's inner loops.
const LANES: usize = 8;

/// `min over k of a[k] + b[k]` (never NaN here: validated costs hold no NaN or `-inf`). The hot
/// loop of the DP: eight independent running minima let the CPU overlap the adds and compares
/// (and the compiler vectorise them); the minimum of a set does not depend on the order it is
/// taken in.
#[inline(always)]
fn least_sum(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [f64::INFINITY; LANES];
    let mut a_chunks = a.chunks_exact(LANES);
    let mut b_chunks = b.chunks_exact(LANES);
    for (ca, cb) in (&mut a_chunks).zip(&mut b_chunks) {
        for t in 0..LANES {
            let c = ca[t] + cb[t];
            acc[t] = if c < acc[t] { c } else { acc[t] };
        }
    }
    let mut least = f64::INFINITY;
    for (&ca, &cb) in a_chunks.remainder().iter().zip(b_chunks.remainder()) {
        let c = ca + cb;
        least = if c < least { c } else { least };
    }
    for x in acc {
        least = if x < least { x } else { least };
    }
    least
}

/// One pool's row of the DP: its cost curve against the best keys of the pools after it.
struct Cells<'a, F: Fn(usize) -> u64> {
    curve: &'a [f64],
    /// The next row's costs, reversed: `next[j - k]` is `next_rev[width - 1 - j + k]`.
    next_rev: &'a [f64],
    next_used: &'a [u64],
    next_moved: &'a [u64],
    move_of: &'a F,
}

impl<F: Fn(usize) -> u64> Cells<'_, F> {
    /// Every cell of the row, with the widest vectors the CPU has (the same float additions and
    /// comparisons either way, so the same answers).
    fn fill_row(&self, row: &mut [f64], urow: &mut [u64], mrow: &mut [u64], crow: &mut [u32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { self.fill_row_avx2(row, urow, mrow, crow) };
            return;
        }
        self.fill_row_portable(row, urow, mrow, crow);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn fill_row_avx2(&self, row: &mut [f64], urow: &mut [u64], mrow: &mut [u64], crow: &mut [u32]) {
        self.fill_row_portable(row, urow, mrow, crow);
    }

    #[inline(always)]
    fn fill_row_portable(
        &self,
        row: &mut [f64],
        urow: &mut [u64],
        mrow: &mut [u64],
        crow: &mut [u32],
    ) {
        for j in 0..row.len() {
            let (c, u, m, k) = self.best(j);
            (row[j], urow[j], mrow[j], crow[j]) = (c, u, m, k as u32);
        }
    }

    /// `G[i][j]`: the best `k` for this pool with `j` units to spend, and its key. On a full
    /// tie the largest `k` wins.
    #[inline(always)]
    fn best(&self, j: usize) -> (f64, u64, u64, usize) {
        let kmax = (self.curve.len() - 1).min(j);
        let start = self.next_rev.len() - 1 - j;
        let a = &self.curve[..=kmax];
        let b = &self.next_rev[start..=start + kmax];
        let least = least_sum(a, b);
        // Pass 2: among the k reaching it, the tie rule (more units, fewer moves, larger k), k
        // ascending. Whole chunks without a candidate are skipped with one vector compare.
        let (mut bc, mut bu, mut bm, mut bk) = (f64::INFINITY, 0_u64, u64::MAX, 0_usize);
        let mut found = false;
        let mut consider = |k: usize, c: f64| {
            let u = k as u64 + self.next_used[j - k];
            // Saturating: absurd `current` values must not overflow (they only break ties).
            let m = (self.move_of)(k).saturating_add(self.next_moved[j - k]);
            if !found || better_or_equal((c, u, m), (bc, bu, bm)) {
                (bc, bu, bm, bk) = (c, u, m, k);
                found = true;
            }
        };
        let mut a_chunks = a.chunks_exact(LANES);
        let mut b_chunks = b.chunks_exact(LANES);
        for (ci, (ca, cb)) in (&mut a_chunks).zip(&mut b_chunks).enumerate() {
            let mut hit = false;
            for t in 0..LANES {
                hit |= ca[t] + cb[t] == least;
            }
            if hit {
                for t in 0..LANES {
                    let c = ca[t] + cb[t];
                    if c == least {
                        consider(ci * LANES + t, c);
                    }
                }
            }
        }
        let base = a.len() - a_chunks.remainder().len();
        for (t, (&ca, &cb)) in a_chunks
            .remainder()
            .iter()
            .zip(b_chunks.remainder())
            .enumerate()
        {
            let c = ca + cb;
            if c == least {
                consider(base + t, c);
            }
        }
        (bc, bu, bm, bk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(costs: Vec<Vec<f64>>, total: u64) -> DpProblem {
        DpProblem {
            costs,
            total,
            ..DpProblem::default()
        }
    }

    #[test]
    fn two_pools_worked_example() {
        // Pool 0 gains 50, 30, 10 misses from its 1st, 2nd, 3rd unit; pool 1 gains 40, 35, 5.
        // With 3 units the best picks are 50 (p0), 40 (p1), 35 (p1): u = [1, 2], cost 50 + 25.
        let p = problem(
            vec![vec![100.0, 50.0, 20.0, 10.0], vec![100.0, 60.0, 25.0, 20.0]],
            3,
        );
        let a = solve_dp(&p).unwrap();
        assert_eq!(a.units, vec![1, 2]);
        assert_eq!(a.cost, 75.0);
    }

    #[test]
    fn cliff_beats_greedy() {
        // Pool 1 has a cliff: nothing until 3 units, then everything. Greedy by first-unit gain
        // would feed pool 0; the DP sees the cliff.
        let p = problem(
            vec![vec![10.0, 8.0, 6.0, 4.0], vec![30.0, 30.0, 30.0, 0.0]],
            3,
        );
        let a = solve_dp(&p).unwrap();
        assert_eq!(a.units, vec![0, 3]);
        assert_eq!(a.cost, 10.0);
    }

    #[test]
    fn ties_spend_units_then_favour_low_ids() {
        // Flat curves: every split costs 0. Rule 1 spends all 5, rule 3 gives pool 0 the most.
        let p = problem(vec![vec![0.0; 4], vec![0.0; 4]], 5);
        assert_eq!(solve_dp(&p).unwrap().units, vec![3, 2]);
        // With a current allocation the fewest moves win before rule 3.
        let p = DpProblem {
            current: Some(vec![1, 3]),
            ..p
        };
        assert_eq!(solve_dp(&p).unwrap().units, vec![2, 3]);
    }

    #[test]
    fn rising_curve_leaves_units_unspent() {
        // Pool 0 gets worse with memory past 1 unit; pool 1 is capped at 1.
        let p = DpProblem {
            costs: vec![vec![5.0, 1.0, 2.0, 3.0], vec![4.0, 0.0, 0.0]],
            total: 6,
            caps: vec![None, Some(1)],
            ..DpProblem::default()
        };
        let a = solve_dp(&p).unwrap();
        assert_eq!(a.units, vec![1, 1]);
        assert_eq!(a.cost, 1.0);
    }

    #[test]
    fn floors_caps_and_radius() {
        let costs = vec![vec![9.0, 7.0, 5.0, 3.0, 1.0], vec![9.0, 6.0, 3.0, 0.0, 0.0]];
        // Unconstrained, 4 units: pool 1 takes 3 (gains 3 each), pool 0 takes 1.
        let a = solve_dp(&problem(costs.clone(), 4)).unwrap();
        assert_eq!(a.units, vec![1, 3]);
        // Floor of 2 on pool 0.
        let p = DpProblem {
            floors: vec![2, 0],
            ..problem(costs.clone(), 4)
        };
        assert_eq!(solve_dp(&p).unwrap().units, vec![2, 2]);
        // Cap of 1 on pool 1: the rest goes to pool 0.
        let p = DpProblem {
            caps: vec![None, Some(1)],
            ..problem(costs.clone(), 4)
        };
        assert_eq!(solve_dp(&p).unwrap().units, vec![3, 1]);
        // From [4, 0] moving at most 1 per pool: pool 1 can only reach 1.
        let p = DpProblem {
            current: Some(vec![4, 0]),
            max_move: Some(1),
            ..problem(costs, 4)
        };
        assert_eq!(solve_dp(&p).unwrap().units, vec![3, 1]);
    }

    #[test]
    fn infinite_cost_forbids_a_size() {
        let p = problem(vec![vec![5.0, f64::INFINITY, 0.0], vec![5.0, 4.0, 3.0]], 2);
        assert_eq!(solve_dp(&p).unwrap().units, vec![2, 0]);
        let p = problem(vec![vec![f64::INFINITY; 3], vec![1.0]], 2);
        assert!(matches!(solve_dp(&p), Err(AllocError::Infeasible { .. })));
    }

    #[test]
    fn portable_row_loop_equals_the_dispatched_one() {
        // On a CPU with AVX2 `fill_row` takes the AVX2 build; CPUs without it take the portable
        // loop. Both must give the same cells, ties included (costs on a coarse grid tie often).
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut below = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n.max(1)
        };
        for width in [1usize, 7, 8, 9, 64, 257] {
            let len = below(width as u64) as usize + 1;
            let curve: Vec<f64> = (0..len).map(|_| below(6) as f64 * 0.5).collect();
            let next: Vec<f64> = (0..width).map(|_| below(6) as f64 * 0.5).collect();
            let next_rev: Vec<f64> = next.iter().rev().copied().collect();
            let used: Vec<u64> = (0..width).map(|_| below(4)).collect();
            let moved: Vec<u64> = (0..width).map(|_| below(4)).collect();
            let move_of = |k: usize| (k as u64) % 3;
            let cells = Cells {
                curve: &curve,
                next_rev: &next_rev,
                next_used: &used,
                next_moved: &moved,
                move_of: &move_of,
            };
            let fill = |portable: bool| {
                let (mut r, mut u, mut m, mut c) = (
                    vec![0.0; width],
                    vec![0; width],
                    vec![0; width],
                    vec![0; width],
                );
                if portable {
                    cells.fill_row_portable(&mut r, &mut u, &mut m, &mut c);
                } else {
                    cells.fill_row(&mut r, &mut u, &mut m, &mut c);
                }
                (r, u, m, c)
            };
            assert_eq!(fill(true), fill(false), "width {width}");
            // And each cell is the brute-force best under the tie rule.
            let (r, _, _, c) = fill(true);
            for j in 0..width {
                let best = (0..=j.min(curve.len() - 1))
                    .map(|k| curve[k] + next[j - k])
                    .fold(f64::INFINITY, f64::min);
                assert_eq!(r[j], best, "width {width} j {j}");
                let k = c[j] as usize;
                assert_eq!(curve[k] + next[j - k], best);
            }
        }
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let ok = vec![vec![1.0, 0.0], vec![1.0, 0.0]];
        let bad = |p: DpProblem| matches!(solve_dp(&p), Err(AllocError::BadInput { .. }));
        let infeasible = |p: DpProblem| matches!(solve_dp(&p), Err(AllocError::Infeasible { .. }));
        assert!(bad(problem(vec![vec![1.0, f64::NAN]], 1)));
        assert!(bad(problem(vec![vec![f64::NEG_INFINITY]], 1)));
        assert!(bad(problem(vec![vec![]], 1)));
        assert!(bad(DpProblem {
            floors: vec![2, 0],
            caps: vec![Some(1), None],
            ..problem(ok.clone(), 5)
        }));
        assert!(bad(DpProblem {
            floors: vec![1, 1],
            ..problem(ok.clone(), 1)
        }));
        assert!(bad(DpProblem {
            floors: vec![1],
            ..problem(ok.clone(), 1)
        }));
        assert!(bad(DpProblem {
            caps: vec![None],
            ..problem(ok.clone(), 1)
        }));
        assert!(bad(DpProblem {
            current: Some(vec![0]),
            ..problem(ok.clone(), 1)
        }));
        assert!(bad(DpProblem {
            max_move: Some(1),
            ..problem(ok.clone(), 1)
        }));
        // 4 pools x 2^22 units is over the cell limit (the curves alone are 32 MB).
        assert!(bad(problem(vec![vec![0.0; (1 << 20) + 1]; 4], 1 << 22)));
        // Floor beyond the curve, radius that cannot reach the bounds.
        assert!(infeasible(DpProblem {
            floors: vec![2, 0],
            ..problem(ok.clone(), 5)
        }));
        assert!(infeasible(DpProblem {
            current: Some(vec![9, 0]),
            max_move: Some(2),
            ..problem(ok.clone(), 5)
        }));
        assert!(infeasible(DpProblem {
            costs: vec![vec![0.0; 10], vec![0.0; 10]],
            current: Some(vec![5, 5]),
            max_move: Some(1),
            ..problem(vec![], 7)
        }));
        // Huge current allocations without a radius only break ties; no overflow.
        let far = DpProblem {
            current: Some(vec![u64::MAX, u64::MAX - 1]),
            ..problem(vec![vec![0.0; 3], vec![0.0; 3]], 4)
        };
        assert_eq!(solve_dp(&far).unwrap().units, vec![2, 2]);
        // Zero pools is a valid, empty problem.
        assert_eq!(
            solve_dp(&problem(vec![], 3)),
            Ok(Allocation {
                units: vec![],
                cost: 0.0
            })
        );
    }
}
