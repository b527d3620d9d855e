//! Locus's memory controllers: the decision logic that partitions memory between pools, chooses
//! K per pool and moves pages between size classes, from models of each pool's locality and
//! miss cost.
//!
//! # Where this crate sits
//!
//! The crate boundary is the decide/act boundary. `locus-engine` owns the seam (the
//! [`Controller`] trait, the [`ControlView`] it is given, the [`Decision`] it returns, the host
//! that runs it inline or on a profiling thread, and the arbiter that carries targets out); this
//! crate owns every controller and the planning code they share. The engine never names a
//! controller, so it builds without this crate, and a controller reaches the engine only
//! through the trait. (The design guide first placed the controllers inside the engine; they
//! moved here when they grew to most of its code.)
//!
//! ```text
//!   locus-server ─┐                          ┌─► locus-mrc   (profilers: KRR, AET, EAET, ...)
//!   locus-sim ────┴─► locus-control ─────────┼─► locus-alloc (solvers: DP, credits, MemSweeper)
//!        (registry: build by name)           └─► locus-engine::control (the seam)
//! ```
//!
//! # Map
//!
//! * [`registry`]: the one table of controllers ([`NAMES`], [`build`], [`build_with`]); the
//!   server configuration, the simulator's experiment files and the CLI construct controllers
//!   from it, with one settings vocabulary.
//! * Shared machinery: [`plan`] (the DP planner over pool curves that the oracle, mPart and
//!   pRedis use), `partition` (run-time partitioning shared by mPart and pRedis: access rates,
//!   mean sizes, contention, move bounds), `checks` (setting validation shared by builders),
//!   `slabs` (per-class tracking and page moves for the slab controllers), `shadow` (shadow
//!   queues for MemSweeper and Memshare), `testkit` (test drivers, test builds only).
//! * Pool partitioning: `basic` (`shared`, `static`), `dlru` (DLRU: K per pool from K-LRU
//!   curves), `kredis` (kRedis: KRR curves per K, DP over pools and K), `predis` (pRedis:
//!   penalty-weighted EAET curves, penalty classes), `mpart` (mPart: AET curves and DP),
//!   `memsweeper` (MemSweeper Max and Fair), `memshare` (Memshare's credits), `oracle` (the best
//!   static partition, planned offline).
//! * Slab (size-class) controllers: `lama` (LAMA), `passive` (`memcached`, `twemcache`: class
//!   modes only), `automove`, `psa`, `facebook`, `slab_oracle`.
//!
//! Solvers are pure functions in `locus-alloc`; controllers turn curves into its inputs and its
//! answers into decisions.

mod automove;
mod basic;
mod checks;
mod dlru;
pub mod dumpload;
mod facebook;
mod kredis;
mod lama;
mod memshare;
mod memsweeper;
mod mpart;
mod oracle;
mod partition;
mod passive;
pub mod plan;
mod predis;
mod psa;
pub mod registry;
mod shadow;
mod slab_oracle;
mod slabs;
#[cfg(test)]
mod testkit;

pub use automove::Automove;
pub use basic::{SharedController, StaticController};
pub use dlru::{Dlru, DlruConfig};
pub use dumpload::{DumpLoadAction, DumpLoadConfig, DumpLoadMode, PeriodDetector};
pub use facebook::{Facebook, FacebookConfig};
pub use kredis::{Kredis, KredisConfig, KredisModel, KrrExponent};
pub use lama::{DefaultClass, DefaultPrediction, Lama, LamaConfig, LamaObjective, predict_default};
pub use locus_engine::control::{
    Access, AccessKind, ClassState, ControlConfig, ControlError, ControlView, Controller,
    CurveRecord, Decision, Evicted, Interval, IntervalRecord, PageMove, PoolState, Settings,
};
pub use memshare::{Memshare, MemshareConfig, MemshareVictim};
pub use memsweeper::{FairGuard, MemSweeper, MemSweeperConfig, MemSweeperStart};
pub use mpart::{Mpart, MpartConfig};
pub use oracle::{Oracle, OracleConfig};
pub use passive::Passive;
pub use plan::{Plan, PlanError, PlanOptions, PoolCurve, cost_at, curve_in_pages, plan};
pub use predis::{PENALTY_CLASSES, Predis, PredisConfig, penalty_class, penalty_class_range};
pub use psa::{Psa, PsaConfig};
pub use registry::{Built, ClassPlan as SlabPlan, NAMES, Offline, build, build_with};
pub use slab_oracle::{ClassCurve, SlabOracle, plan_classes};
