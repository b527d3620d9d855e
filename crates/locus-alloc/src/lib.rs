//! Partition solvers for Locus (doc in progress).

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
pub use qos::{least_units_for_hit_ratio, qos_partition};
pub use sweep::{
    FairHistory, PoolScore, SweepMode, Sweeper, fair_score, sweep_move, sweep_move_with_history,
};
