//! Partition solvers for Locus: cost curves in, memory targets out (work in progress, issue #4).
