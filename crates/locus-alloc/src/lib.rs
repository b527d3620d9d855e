//! Partition solvers for Locus (doc in progress).

mod dp;
mod error;
mod objective;

pub use dp::{Allocation, DpProblem, MAX_DP_CELLS, solve_dp};
pub use error::AllocError;
pub use objective::{Objective, marginal_loss, marginal_utility, miss_cost, working_set_size};
