//! Seeded synthetic workloads (in progress).
