//! Every solver against brute-force enumeration on small random inputs.
//!
//! The brute force here shares no code with the crate: it enumerates every vector `u` with
//! `u_i < len(cost_i)`, keeps the ones meeting the constraints exactly as the problem states
//! them, and picks the best by the documented key (cost, then more units, then fewer moves,
//! then the lexicographically larger vector).

use locus_alloc::{
    AllocError, Credits, DpProblem, PoolScore, SweepMode, qos_partition, solve_dp, sweep_move,
    wss_bonus,
};
use proptest::prelude::*;

/// Calls `f` on every allocation vector with `u_i < lens[i]`.
fn for_each_vector(lens: &[usize], f: &mut impl FnMut(&[u64])) {
    let mut u = vec![0_u64; lens.len()];
    loop {
        f(&u);
        let mut i = 0;
        loop {
            if i == lens.len() {
                return;
            }
            u[i] += 1;
            if (u[i] as usize) < lens[i] {
                break;
            }
            u[i] = 0;
            i += 1;
        }
    }
}

/// The constraints as stated in the contract, plus an extra per-pool lower bound.
fn feasible(p: &DpProblem, u: &[u64], extra_lo: &[u64]) -> bool {
    let sum: u64 = u.iter().sum();
    if sum > p.total {
        return false;
    }
    for (i, &ui) in u.iter().enumerate() {
        if ui < p.floors.get(i).copied().unwrap_or(0) || ui < extra_lo.get(i).copied().unwrap_or(0)
        {
            return false;
        }
        if let Some(Some(cap)) = p.caps.get(i)
            && ui > *cap
        {
            return false;
        }
        if let (Some(cur), Some(r)) = (&p.current, p.max_move)
            && ui.abs_diff(cur[i]) > r
        {
            return false;
        }
    }
    true
}

/// Sum from the last pool to the first, as the solver documents.
fn cost_of(p: &DpProblem, u: &[u64]) -> f64 {
    let mut acc = 0.0;
    for i in (0..u.len()).rev() {
        acc += p.costs[i][u[i] as usize];
    }
    acc
}

fn moves(p: &DpProblem, u: &[u64]) -> u64 {
    p.current
        .as_ref()
        .map_or(0, |c| u.iter().zip(c).map(|(a, b)| a.abs_diff(*b)).sum())
}

/// The best feasible allocation by the documented tie rule, or None.
fn brute(p: &DpProblem, extra_lo: &[u64]) -> Option<(Vec<u64>, f64)> {
    let lens: Vec<usize> = p.costs.iter().map(Vec::len).collect();
    let mut best: Option<(Vec<u64>, f64)> = None;
    for_each_vector(&lens, &mut |u| {
        if !feasible(p, u, extra_lo) {
            return;
        }
        let c = cost_of(p, u);
        if c == f64::INFINITY {
            return;
        }
        let better = match &best {
            None => true,
            Some((bu, bc)) => {
                let (su, sb) = (u.iter().sum::<u64>(), bu.iter().sum::<u64>());
                c < *bc
                    || (c == *bc
                        && (su > sb
                            || (su == sb
                                && (moves(p, u) < moves(p, bu)
                                    || (moves(p, u) == moves(p, bu) && u > bu.as_slice())))))
            }
        };
        if better {
            best = Some((u.to_vec(), c));
        }
    });
    best
}

/// What the contract says must be rejected as bad input before any search.
fn malformed(p: &DpProblem) -> bool {
    let n = p.costs.len();
    let floor = |i: usize| p.floors.get(i).copied().unwrap_or(0);
    (0..n).any(|i| matches!(p.caps.get(i), Some(Some(c)) if floor(i) > *c))
        || (0..n).map(floor).sum::<u64>() > p.total
}

/// A random problem: 1-4 pools, curves of 1-7 samples (integer costs 0..=6 so that ties are
/// common, sometimes +inf, or floats in [-100, 100)),
/// total <= 12, optional floors, caps, current allocation and move radius.
fn problems(integer: bool) -> impl Strategy<Value = DpProblem> {
    (1_usize..=4)
        .prop_flat_map(move |n| {
            let cost = if integer {
                prop_oneof![
                    10 => (0_u32..=6).prop_map(f64::from),
                    1 => Just(f64::INFINITY),
                ]
                .boxed()
            } else {
                (-100.0_f64..100.0).boxed()
            };
            (
                prop::collection::vec(prop::collection::vec(cost, 1..=7), n),
                0_u64..=12,
                prop::option::of(prop::collection::vec(0_u64..=4, n)),
                prop::option::of(prop::collection::vec(prop::option::of(0_u64..=8), n)),
                prop::option::of((
                    prop::collection::vec(0_u64..=8, n),
                    prop::option::of(0_u64..=3),
                )),
            )
        })
        .prop_map(|(costs, total, floors, caps, current)| {
            let (current, max_move) = match current {
                Some((c, r)) => (Some(c), r),
                None => (None, None),
            };
            DpProblem {
                costs,
                total,
                floors: floors.unwrap_or_default(),
                caps: caps.unwrap_or_default(),
                current,
                max_move,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Integer costs tie often and sum exactly: the solver must return the very allocation the
    /// brute force picks, and agree on infeasibility.
    #[test]
    fn dp_equals_brute_force_with_ties(p in problems(true)) {
        let got = solve_dp(&p);
        if malformed(&p) {
            prop_assert!(matches!(got, Err(AllocError::BadInput { .. })), "{got:?}");
        } else {
            match brute(&p, &[]) {
                None => prop_assert!(matches!(got, Err(AllocError::Infeasible { .. })), "{got:?}"),
                Some((units, cost)) => {
                    let got = got.unwrap();
                    prop_assert_eq!(got.units, units);
                    prop_assert_eq!(got.cost, cost);
                }
            }
        }
    }

    /// Arbitrary float costs: the optimum cost agrees and the answer is feasible and priced
    /// right.
    #[test]
    fn dp_equals_brute_force_floats(p in problems(false)) {
        let got = solve_dp(&p);
        if malformed(&p) {
            prop_assert!(matches!(got, Err(AllocError::BadInput { .. })), "{got:?}");
        } else {
            match brute(&p, &[]) {
                None => prop_assert!(matches!(got, Err(AllocError::Infeasible { .. })), "{got:?}"),
                Some((_, cost)) => {
                    let got = got.unwrap();
                    prop_assert!(feasible(&p, &got.units, &[]));
                    prop_assert_eq!(got.cost, cost_of(&p, &got.units));
                    prop_assert!((got.cost - cost).abs() <= 1e-9 * (1.0 + cost.abs()),
                        "{} vs {}", got.cost, cost);
                }
            }
        }
    }

    /// LAMA QoS on non-decreasing hit-ratio curves equals the brute force over allocations
    /// that meet every hit-ratio floor (within the move radius: approach the floor).
    #[test]
    fn qos_equals_brute_force(
        p in problems(true),
        steps in prop::collection::vec(prop::collection::vec(0_u32..=3, 7), 4),
        floors in prop::collection::vec(prop_oneof![Just(0.0), 0.0_f64..=1.0], 4),
    ) {
        let n = p.costs.len();
        // Hit ratio curves as long as the cost curves, rising by 0-3 tenths per unit, capped at 1.
        let hit: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                let mut h = 0.0_f64;
                (0..p.costs[i].len())
                    .map(|u| {
                        if u > 0 {
                            h = (h + f64::from(steps[i][u]) / 10.0).min(1.0);
                        }
                        h
                    })
                    .collect()
            })
            .collect();
        let floors = &floors[..n];
        let got = qos_partition(&p, &hit, floors);
        if malformed(&p) {
            prop_assert!(matches!(got, Err(AllocError::BadInput { .. })), "{got:?}");
            return Ok(());
        }
        // Least units per pool meeting its floor, clamped by the move radius.
        let least: Option<Vec<u64>> = (0..n)
            .map(|i| {
                let l = hit[i].iter().position(|&h| h >= floors[i])? as u64;
                Some(match (&p.current, p.max_move) {
                    (Some(c), Some(r)) => l.min(c[i] + r),
                    _ => l,
                })
            })
            .collect();
        let expected = least.and_then(|l| brute(&p, &l));
        match expected {
            None => prop_assert!(matches!(got, Err(AllocError::Infeasible { .. })), "{got:?}"),
            Some((units, cost)) => {
                let got = got.unwrap();
                prop_assert_eq!(&got.units, &units);
                prop_assert_eq!(got.cost, cost);
                if p.max_move.is_none() {
                    for i in 0..n {
                        prop_assert!(hit[i][units[i] as usize] >= floors[i]);
                    }
                }
            }
        }
    }

    /// mPart's bonus: everyone gets its working set, the bonus is handed out in full and each
    /// share is within one unit of its exact proportion.
    #[test]
    fn wss_bonus_is_proportional(
        wss in prop::collection::vec(0_u64..1000, 0..6),
        extra in 0_u64..5000,
    ) {
        let sum: u64 = wss.iter().sum();
        let total = sum + extra;
        let got = wss_bonus(&wss, total).unwrap();
        prop_assert_eq!(got.iter().sum::<u64>(), if wss.is_empty() { 0 } else { total });
        for (i, (&g, &w)) in got.iter().zip(&wss).enumerate() {
            prop_assert!(g >= w);
            let exact = if sum == 0 {
                extra as f64 / wss.len() as f64
            } else {
                extra as f64 * w as f64 / sum as f64
            };
            prop_assert!(((g - w) as f64 - exact).abs() < 1.0, "pool {i}: {} vs {exact}", g - w);
        }
        if sum > 0 {
            prop_assert_eq!(wss_bonus(&wss, sum - 1), None);
        }
    }

    /// Max_MemSweeper against its definition: the victor has the highest gain, the victim the
    /// lowest loss among the others above their floor, and a move happens exactly when the
    /// gain beats the loss.
    #[test]
    fn sweep_max_matches_definition(
        pools in prop::collection::vec((0_u64..5, 0_u32..10, 0_u32..10, 0_u64..3), 0..5),
    ) {
        let pools: Vec<PoolScore> = pools
            .into_iter()
            .map(|(units, up, down, floor)| PoolScore {
                units,
                gain_up: f64::from(up),
                loss_down: f64::from(down),
                hit_ratio: 0.5,
                rate: 10.0,
                floor,
            })
            .collect();
        let got = sweep_move(&pools, SweepMode::Max);
        let best_up = pools.iter().map(|p| p.gain_up).fold(f64::NEG_INFINITY, f64::max);
        let victor = pools.iter().position(|p| p.gain_up == best_up);
        let least_down = victor.and_then(|w| {
            pools
                .iter()
                .enumerate()
                .filter(|&(i, p)| i != w && p.units > p.floor)
                .map(|(_, p)| p.loss_down)
                .reduce(f64::min)
        });
        match got {
            None => prop_assert!(least_down.is_none_or(|d| d >= best_up)),
            Some((v, w)) => {
                prop_assert_eq!(Some(w), victor);
                prop_assert!(v != w && pools[v].units > pools[v].floor);
                prop_assert_eq!(Some(pools[v].loss_down), least_down);
                prop_assert!(pools[w].gain_up > pools[v].loss_down);
            }
        }
    }

    /// Credits never take a pool below its floor or move more than a step, and only a pool
    /// that earned more than the giver receives.
    #[test]
    fn credits_respect_floors_and_step(
        hits in prop::collection::vec((0_usize..4, 0.0_f64..3.0), 0..20),
        units in prop::collection::vec(0_u64..20, 4),
        floors in prop::collection::vec(0_u64..20, 4),
        step in 0_u64..8,
    ) {
        let mut c = Credits::new(4, step);
        for &(pool, w) in &hits {
            c.record_shadow_hit(pool, w);
        }
        let earned = c.credits().to_vec();
        if let Some((from, to, moved)) = c.round(&units, &floors) {
            prop_assert!(from != to);
            prop_assert!(moved >= 1 && moved <= step);
            prop_assert!(units[from] - moved >= floors[from]);
            prop_assert!(earned[to] > earned[from]);
            prop_assert!(earned.iter().all(|&e| e <= earned[to]));
        }
        prop_assert!(c.credits().iter().all(|&e| e == 0.0));
    }
}

/// A plain forward DP with the whole allocation vector in each state, for problems too large to
/// enumerate: `F[i][j]` = best `(cost, moves, vector)` of pools `0..i` holding exactly `j`
/// units. Lexicographic order on whole vectors is decided by the prefix when two prefixes
/// share a suffix, so keeping the best prefix per `(i, j)` is exact.
fn reference_dp(p: &DpProblem) -> Option<(Vec<u64>, f64)> {
    type State = Option<(f64, u64, Vec<u64>)>;
    let n = p.costs.len();
    let t = p.total as usize;
    let mut f: Vec<State> = vec![None; t + 1];
    f[0] = Some((0.0, 0, vec![]));
    for i in 0..n {
        let mut g: Vec<State> = vec![None; t + 1];
        for (j, state) in f.iter().enumerate() {
            let Some((c0, m0, v0)) = state else { continue };
            for (u, &cu) in p.costs[i].iter().enumerate() {
                if j + u > t || !feasible_one(p, i, u as u64) || cu == f64::INFINITY {
                    continue;
                }
                let mut v = v0.clone();
                v.push(u as u64);
                let m = m0 + p.current.as_ref().map_or(0, |c| (u as u64).abs_diff(c[i]));
                // Integer costs: the order of the additions cannot change the sum.
                let cand = (c0 + cu, m, v);
                let slot = &mut g[j + u];
                let better = match slot {
                    None => true,
                    Some((c, m, v)) => {
                        cand.0 < *c
                            || (cand.0 == *c && (cand.1 < *m || (cand.1 == *m && cand.2 > *v)))
                    }
                };
                if better {
                    *slot = Some(cand);
                }
            }
        }
        f = g;
    }
    // Best over every total j <= t: lower cost, then more units, then the state's own order.
    let mut best: Option<(f64, usize, u64, Vec<u64>)> = None;
    for (j, state) in f.into_iter().enumerate() {
        let Some((c, m, v)) = state else { continue };
        let better = match &best {
            None => true,
            Some((bc, bj, bm, bv)) => {
                c < *bc
                    || (c == *bc && (j > *bj || (j == *bj && (m < *bm || (m == *bm && v > *bv)))))
            }
        };
        if better {
            best = Some((c, j, m, v));
        }
    }
    best.map(|(c, _, _, v)| (v, c))
}

/// Pool `i` may hold `u` units (floor, cap, move radius).
fn feasible_one(p: &DpProblem, i: usize, u: u64) -> bool {
    u >= p.floors.get(i).copied().unwrap_or(0)
        && p.caps.get(i).copied().flatten().is_none_or(|c| u <= c)
        && match (&p.current, p.max_move) {
            (Some(c), Some(r)) => u.abs_diff(c[i]) <= r,
            _ => true,
        }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Curves long enough for the solver's chunked inner loops (8 lanes), checked against the
    /// reference DP: same allocation, same cost.
    #[test]
    fn dp_equals_reference_on_longer_curves(
        n in 1_usize..=4,
        seed_costs in prop::collection::vec(prop::collection::vec(0_u32..=6, 1..=40), 4),
        total in 0_u64..=100,
        floors in prop::option::of(prop::collection::vec(0_u64..=10, 4)),
        caps in prop::option::of(prop::collection::vec(prop::option::of(5_u64..=40), 4)),
        current in prop::option::of((prop::collection::vec(0_u64..=40, 4), prop::option::of(0_u64..=20))),
    ) {
        let (current, max_move) = match current {
            Some((c, r)) => (Some(c[..n].to_vec()), r),
            None => (None, None),
        };
        let p = DpProblem {
            costs: seed_costs[..n]
                .iter()
                .map(|c| c.iter().map(|&x| f64::from(x)).collect())
                .collect(),
            total,
            floors: floors.map(|f| f[..n].to_vec()).unwrap_or_default(),
            caps: caps.map(|c| c[..n].to_vec()).unwrap_or_default(),
            current,
            max_move,
        };
        let got = solve_dp(&p);
        if malformed(&p) {
            prop_assert!(matches!(got, Err(AllocError::BadInput { .. })), "{got:?}");
        } else {
            match reference_dp(&p) {
                None => prop_assert!(matches!(got, Err(AllocError::Infeasible { .. })), "{got:?}"),
                Some((units, cost)) => {
                    let got = got.unwrap();
                    prop_assert_eq!(got.units, units);
                    prop_assert_eq!(got.cost, cost);
                }
            }
        }
    }

    /// The reference DP itself agrees with enumeration on small problems, so the check above
    /// rests on something tested.
    #[test]
    fn reference_equals_brute_force(p in problems(true)) {
        if !malformed(&p) {
            prop_assert_eq!(reference_dp(&p), brute(&p, &[]));
        }
    }
}

proptest! {
    /// Fair and Max on arbitrary (valid) scores never pick a victim at its floor, never pick the
    /// same pool twice, and a Fair move always goes to a pool that would gain something.
    #[test]
    fn sweep_never_breaks_floors(
        pools in prop::collection::vec(
            (0_u64..50, 0.0_f64..1e6, 0.0_f64..1e6, 0.0_f64..=1.0, 0.0_f64..1e9, 0_u64..50),
            0..6,
        ),
        history in prop::collection::vec((0_u64..100, 0_u64..100, 0.0_f64..1e3), 6),
    ) {
        let pools: Vec<PoolScore> = pools
            .into_iter()
            .map(|(units, gain_up, loss_down, hit_ratio, rate, floor)| PoolScore {
                units, gain_up, loss_down, hit_ratio, rate, floor,
            })
            .collect();
        let history: Vec<locus_alloc::FairHistory> = history[..pools.len()]
            .iter()
            .map(|&(released, gained, since_gain)| locus_alloc::FairHistory { released, gained, since_gain })
            .collect();
        for mode in [SweepMode::Max, SweepMode::Fair] {
            let got = locus_alloc::sweep_move_with_history(&pools, &history, mode).unwrap();
            if let Some((v, w)) = got {
                prop_assert!(v != w);
                prop_assert!(pools[v].units > pools[v].floor);
                prop_assert!(pools[w].gain_up > 0.0);
            }
        }
    }
}

proptest! {
    /// Arbitrary input (any f64 including NaN and infinities, mismatched lengths, huge
    /// numbers): the solvers return a typed error or a feasible answer, never panic.
    #[test]
    fn arbitrary_input_never_panics(
        costs in prop::collection::vec(prop::collection::vec(prop::num::f64::ANY, 0..6), 0..4),
        total in prop_oneof![0_u64..20, Just(u64::MAX)],
        floors in prop::collection::vec(prop_oneof![0_u64..6, Just(u64::MAX)], 0..4),
        caps in prop::collection::vec(prop::option::of(prop_oneof![0_u64..6, Just(u64::MAX)]), 0..4),
        current in prop::option::of(prop::collection::vec(prop_oneof![0_u64..6, Just(u64::MAX)], 0..4)),
        max_move in prop::option::of(prop_oneof![0_u64..4, Just(u64::MAX)]),
        hit in prop::collection::vec(prop::collection::vec(prop::num::f64::ANY, 0..6), 0..4),
        qos in prop::collection::vec(prop::num::f64::ANY, 0..4),
    ) {
        let p = DpProblem { costs, total, floors, caps, current, max_move };
        if let Ok(a) = solve_dp(&p) {
            prop_assert!(feasible(&p, &a.units, &[]));
            prop_assert!(a.units.iter().zip(&p.costs).all(|(&u, c)| (u as usize) < c.len()));
        }
        if let Ok(a) = qos_partition(&p, &hit, &qos) {
            prop_assert!(feasible(&p, &a.units, &[]));
        }
        let _ = wss_bonus(&p.floors, total);
        let _ = locus_alloc::wss_bonus_bounded(&p.floors, &p.floors, &p.caps, total);
    }
}
