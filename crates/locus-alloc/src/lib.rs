//! Pure partition solvers for Locus: cost curves in, memory targets out.
//!
//! Every Locus controller that divides memory between pools (tenants, or size classes inside a
//! tenant) reduces its decision to one of the solvers here. They know nothing of the engine,
//! pages, keys or clocks: inputs are plain numbers over abstract *units* (the caller picks the
//! granularity, e.g. one unit = g pages), outputs are unit counts or a single move. Nothing here
//! allocates memory, prints, or panics on bad input: malformed arguments come back as
//! [`AllocError::BadInput`], unsatisfiable ones as [`AllocError::Infeasible`].
//!
//! Non-goals: building miss-ratio curves (`locus-mrc`), measuring miss penalties or shadow-queue
//! hits, carrying moves out (`locus-engine`'s controllers and rebalancer).
//!
//! # Components
//!
//! ```text
//!  MRC mr_i(u), rate, penalty ──miss_cost──► cost_i[u] ──┬─ solve_dp ────────► units per pool
//!        (objective.rs)                                  ├─ qos_partition ───► units per pool
//!  WSS_i (working_set_size) ───────wss_bonus───────────► │   (least units meeting a hit-ratio
//!        (mpart.rs)               (or None: use the DP)  │    floor, then the DP; qos.rs)
//!                                                        │
//!  per-pool marginal utilities ──sweep_move / Sweeper──► one (victim, victor) unit move
//!        (sweep.rs: Max, Fair)
//!  shadow-queue hits ────────────Credits::round───────► one (from, to, units) batch
//!        (credits.rs: Memshare / Cliffhanger)
//! ```
//!
//! | solver | follows | used by |
//! |---|---|---|
//! | [`solve_dp`] | kRedis (paper 000, ch. 4, eq. 4.3, Alg. 1), pRedis (001, eq. 9-11), mPart (004, eq. 4-5, Alg. 1 with bounds `L_i`, `H_i`), LAMA (002, Alg. 1, radius `N` around the current allocation) | kredis, predis, mpart, lama |
//! | [`miss_cost`], [`Objective`] | misses (004 eq. 4), miss latency (000 eq. 4.2, 001 eq. 8), hit throughput (000 eq. 4.4) | all DP users |
//! | [`wss_bonus`], [`wss_bonus_bounded`], [`working_set_size`] | mPart (004 sec. 3.2, Alg. 1 lines 2-11; WSS as in sec. 1 and 4.1) | mpart |
//! | [`least_units_for_hit_ratio`], [`qos_partition`] | LAMA QoS partition (002 sec. 4, Alg. 2) | lama / any QoS tenant |
//! | [`marginal_utility`], [`marginal_loss`] | MemSweeper's per-page marginal utility (003 sec. 3.1-3.2) | memsweeper |
//! | [`sweep_move`], [`sweep_move_with_history`], [`Sweeper`], [`fair_score`] | Max_MemSweeper (003 formulas 1.1-1.2) and Fair_MemSweeper (003 formula 2, Alg. 2, Table 1) | memsweeper-max, memsweeper-fair |
//! | [`Credits`] | Memshare's credit rule as described in 004 sec. 2 (Cliffhanger in 003 sec. 2.1) | memshare |
//!
//! # The DP
//!
//! For pools `i = 0..n` with cost curves `cost_i[u]`, the total `T`, floors, caps, and
//! optionally the current allocation `cur_i` and a move radius `r`:
//!
//! ```text
//!   minimise    sum_i cost_i[u_i]
//!   subject to  sum_i u_i <= T,    lo_i <= u_i <= hi_i
//!               lo_i = max(floor_i, cur_i - r)
//!               hi_i = min(cap_i, len(cost_i) - 1, cur_i + r)
//!
//!   with v_i = u_i - lo_i and B = min(T, sum hi) - sum lo, over suffixes of the pools:
//!
//!   G[n][j] = 0                                                     j = 0..=B
//!   G[i][j] = min_{k = 0..=min(hi_i - lo_i, j)}  cost_i[lo_i + k] + G[i+1][j - k]
//!   optimum = G[0][B]; u_0 = lo_0 + (best k at G[0][B]), then pool 1 with B - k, ...
//! ```
//!
//! This is the papers' recurrence (`miss(i, j) = min_k miss(i-1, j-k) + mrc_i(k) * NR_i`) run
//! from the last pool so the answer can be read forward, with "at most `j`" instead of "exactly
//! `j`": a rising curve may leave units unspent, and with non-increasing curves the result
//! spends `min(T, sum hi)` exactly as the papers' `sum C_i = M` does. Ties among equal costs go
//! to (1) more units spent, (2) fewer units moved from `cur`, (3) the lexicographically larger
//! vector (lower pool ids first); see [`solve_dp`]. Time `O(n * B * max span)`, at most
//! `O(n * T^2)`; with a radius `r`, `O(n * B * r)` as in LAMA. Measured with
//! `cargo run --release -p locus-alloc --example dp_timing` on a shared 2-core machine (load
//! 15-18): 4 pools x 4096 units take 10-12 ms of CPU (20-56 ms wall), 8 pools x 4096 take
//! 30-36 ms of CPU (100-180 ms wall), 16 pools x 4096 with a radius of 64 take 2 ms of CPU.
//!
//! # Example
//!
//! ```
//! use locus_alloc::{DpProblem, Objective, miss_cost, solve_dp};
//!
//! // Pool 0 improves steadily; pool 1 has a cliff at 3 units. 100 accesses each per interval.
//! let p0 = miss_cost(&[1.0, 0.5, 0.2, 0.1], 100.0, 0.0, Objective::Misses);
//! let p1 = miss_cost(&[1.0, 0.9, 0.8, 0.0], 100.0, 0.0, Objective::Misses);
//! let problem = DpProblem { costs: vec![p0, p1], total: 3, ..DpProblem::default() };
//! let best = solve_dp(&problem)?;
//! assert_eq!(best.units, vec![0, 3]); // 100 misses, where greedy [2, 1] gets 110
//! # Ok::<(), locus_alloc::AllocError>(())
//! ```
//!
//! # Testing
//!
//! Unit tests beside each solver hold hand-checked examples (MemSweeper's Table 1 is replayed
//! round by round); `tests/brute_force.rs` checks [`solve_dp`] and [`qos_partition`] against
//! exhaustive enumeration on random problems (1-4 pools, total <= 12, floors, caps, radius),
//! exact tie rule included, and against a reference DP on curves up to 40 units.

mod credits;
mod dp;
mod error;
mod mpart;
mod objective;
mod qos;
mod sweep;

pub use credits::Credits;
pub use dp::{Allocation, DpProblem, MAX_DP_CELLS, solve_dp};
pub use error::AllocError;
pub use mpart::{wss_bonus, wss_bonus_bounded};
pub use objective::{Objective, marginal_loss, marginal_utility, miss_cost, working_set_size};
pub use qos::{group_cost, least_units_for_hit_ratio, qos_partition};
pub use sweep::{
    FairHistory, PoolScore, SweepMode, Sweeper, fair_score, sweep_move, sweep_move_with_history,
};
