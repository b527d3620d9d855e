//! Trace-driven experiments on the Locus engine (work in progress, issue #4).
