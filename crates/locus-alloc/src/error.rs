//! The one error type of the crate.

/// Why a solver could not produce an answer.
///
/// `BadInput` means the arguments contradict themselves or are malformed (a NaN cost, a floor above
/// its cap, vectors of the wrong length, floors that add up to more than the total); fixing the
/// caller fixes it. `Infeasible` means the arguments are well formed but no allocation meets every
/// constraint at once (a move radius that cannot reach a floor, a QoS floor no curve reaches, a
/// curve too short to hold a floor); the caller should relax something or keep its current state.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum AllocError {
    /// No allocation satisfies every constraint.
    #[error("infeasible allocation problem: {reason}")]
    Infeasible {
        /// Which constraints collide, with the numbers.
        reason: String,
    },
    /// The input is malformed or self-contradictory.
    #[error("bad allocation input: {reason}")]
    BadInput {
        /// What is wrong, naming the pool and unit where there is one.
        reason: String,
    },
}

impl AllocError {
    pub(crate) fn bad(reason: impl Into<String>) -> Self {
        AllocError::BadInput {
            reason: reason.into(),
        }
    }

    pub(crate) fn infeasible(reason: impl Into<String>) -> Self {
        AllocError::Infeasible {
            reason: reason.into(),
        }
    }
}
