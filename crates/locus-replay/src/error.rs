//! The errors of a replay run. Every one names what failed (the target, the backend, the trace
//! file and its line) so that `locus replay` can print it and exit non-zero.

use std::io;

/// What can go wrong in a replay.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A setting is invalid (the message names the option and the value).
    #[error("{0}")]
    Config(String),
    /// The cache server could not be reached, or the connection failed during the run.
    #[error("target {target}: {error}")]
    Target {
        /// The address.
        target: String,
        /// The socket error (in the message, so not also a `source`).
        error: io::Error,
    },
    /// The cache server answered something the client does not understand.
    #[error("target {target}: {message}")]
    Protocol {
        /// The address.
        target: String,
        /// What was wrong.
        message: String,
    },
    /// The backend (PostgreSQL) could not be started, reached or queried.
    #[error("backend {backend}: {message}")]
    Backend {
        /// Which backend.
        backend: String,
        /// What failed.
        message: String,
    },
    /// The request stream (trace file or experiment) failed.
    #[error(transparent)]
    Workload(#[from] locus_sim::SimError),
    /// The trace file is unreadable or malformed (the message names the file and the line or offset).
    #[error(transparent)]
    Trace(#[from] locus_trace::TraceError),
    /// An output could not be written.
    #[error("{what}: {error}")]
    Io {
        /// The file or the operation.
        what: String,
        /// The error (in the message, so not also a `source`).
        error: io::Error,
    },
    /// Ctrl-C or SIGTERM stopped the run.
    #[error("interrupted")]
    Interrupted,
}

/// A `Result` with [`ReplayError`].
pub type Result<T, E = ReplayError> = std::result::Result<T, E>;
