//! Typed errors of the MRC crate.

use thiserror::Error;

/// Everything that can go wrong building a profiler or a curve.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MrcError {
    /// A sampling rate outside `(0, 1]`, or too small to sample anything with `P = 2^24`.
    #[error("sampling rate {rate} is not in (0, 1] (or is below 1/2^24)")]
    InvalidRate {
        /// The rejected rate.
        rate: f64,
    },
    /// A fixed-size SHARDS bound of zero.
    #[error("fixed-size sample bound must be at least 1, got {size}")]
    InvalidFixedSize {
        /// The rejected bound.
        size: usize,
    },
    /// A K-LRU sample count of zero (or absurdly large).
    #[error("K must be in 1..=1024, got {k}")]
    InvalidK {
        /// The rejected K.
        k: u32,
    },
    /// A KRR exponent that is not a finite positive number.
    #[error("KRR exponent must be finite and > 0, got {exponent}")]
    InvalidExponent {
        /// The rejected exponent.
        exponent: f64,
    },
    /// A model asked for a capacity unit it does not support.
    #[error("model {model} does not support {unit} capacities{hint}")]
    UnsupportedUnit {
        /// The model's name.
        model: String,
        /// The requested unit.
        unit: crate::Unit,
        /// A hint on what to use instead.
        hint: String,
    },
    /// An option that does not apply to the model (e.g. `--fixed-size` for AET).
    #[error("option {option} does not apply to model {model}")]
    UnsupportedOption {
        /// The model's name.
        model: String,
        /// The option.
        option: String,
    },
    /// A model name the registry does not know.
    #[error("unknown model {name:?} (known: exact, shards, aet, eaet, footprint, krr, mini)")]
    UnknownModel {
        /// The rejected name.
        name: String,
    },
    /// A model that exists in the design but is not implemented in this build.
    #[error("model {name} is not available yet: {reason}")]
    NotAvailable {
        /// The model.
        name: String,
        /// Why.
        reason: String,
    },
    /// Curve points that are not finite, or capacities that are negative or not increasing.
    #[error("invalid curve: {reason}")]
    InvalidCurve {
        /// What is wrong.
        reason: String,
    },
    /// Two curves with different capacity units or miss-ratio metrics were combined.
    #[error("curves disagree: {left} vs {right}")]
    Mismatch {
        /// The first curve's unit/metric.
        left: String,
        /// The second curve's unit/metric.
        right: String,
    },
    /// A decay factor outside `[0, 1]`, or a partial decay of a model that cannot weigh history.
    #[error("cannot decay {model} by {factor}: {reason}")]
    InvalidDecay {
        /// The model.
        model: String,
        /// The rejected factor.
        factor: f64,
        /// Why.
        reason: String,
    },
    /// An operation needing at least one curve or point got none.
    #[error("empty input: {what}")]
    Empty {
        /// What was empty.
        what: String,
    },
}
