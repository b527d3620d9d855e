//! The one table of controllers. The server's `[controller]` section, `LOCUS.CONTROLLER SET`, the
//! simulator's experiment files and the CLI all construct controllers here, by name, from the
//! same settings vocabulary ([`Settings`]: unknown keys are errors).
//!
//! Two controllers plan from the whole workload, which only an offline driver knows: `oracle`
//! (the best static partition between pools) and `slab-oracle` (the best static split between
//! size classes). Given explicit targets they run anywhere; asked to plan (`oracle`:
//! `objective`, `step`, `per_phase`; `slab-oracle`: `per_phase`) they need an [`Offline`]
//! planner, which the simulator passes to [`build_with`] and a live server cannot.

use locus_alloc::Objective;
use locus_engine::control::{ControlError, Controller, Settings};
use locus_engine::{ClassId, PoolId};

use crate::{
    automove, basic, dlru, facebook, kredis, lama, memshare, memsweeper, mpart, oracle, passive,
    predis, psa, slab_oracle,
};

/// Pages per (pool, size class): a slab plan.
pub type ClassPlan = Vec<(PoolId, ClassId, u64)>;

/// A builder from settings.
type BuildFn = fn(Settings) -> Result<Box<dyn Controller>, ControlError>;

/// One registered controller.
struct Entry {
    name: &'static str,
    build: BuildFn,
}

macro_rules! registry {
    ($($name:literal => $build:path),* $(,)?) => {
        /// The registered controller names, in registry order.
        pub const NAMES: &[&str] = &[$($name),*];
        const ENTRIES: &[Entry] = &[$(Entry { name: $name, build: $build }),*];
    };
}

registry! {
    "shared" => basic::build_shared,
    "static" => basic::build_static,
    "dlru" => dlru::build,
    "kredis" => kredis::build,
    "predis" => predis::build,
    "mpart" => mpart::build,
    "memsweeper-max" => memsweeper::build_max,
    "memsweeper-fair" => memsweeper::build_fair,
    "memshare" => memshare::build,
    "oracle" => oracle::build,
    "lama" => lama::build,
    "memcached" => passive::build_memcached,
    "automove" => automove::build,
    "psa" => psa::build,
    "facebook" => facebook::build,
    "twemcache" => passive::build_twemcache,
    "slab-oracle" => slab_oracle::build,
}

/// What only an offline driver (the simulator) knows: the whole workload ahead, hence the exact
/// curves the oracles plan from. Each method returns one plan per phase (a single entry when
/// `per_phase` is false or the workload has no phases).
pub trait Offline {
    /// Pages per pool (pool order) of the best static partition under `objective` (`None`: the
    /// driver's default), DP granularity `step` pages (0 = automatic).
    ///
    /// # Errors
    /// A plan that cannot be made, as a [`ControlError`].
    fn pool_plans(
        &self,
        objective: Option<Objective>,
        step: u64,
        per_phase: bool,
    ) -> Result<Vec<Vec<u64>>, ControlError>;

    /// Pages per (pool, class) of the best static split between size classes.
    ///
    /// # Errors
    /// A plan that cannot be made, as a [`ControlError`].
    fn class_plans(&self, per_phase: bool) -> Result<Vec<ClassPlan>, ControlError>;
}

/// A controller as [`build_with`] makes it: the one to install, and, for per-phase plans, the
/// one to install at the start of each later phase (`phases[i]` for phase `i + 1`).
#[derive(Debug)]
pub struct Built {
    /// The controller for the start of the run.
    pub controller: Box<dyn Controller>,
    /// Controllers for the later phases, in order (empty for one controller throughout).
    pub phases: Vec<Box<dyn Controller>>,
}

/// Builds the controller `name` from its settings.
///
/// # Errors
/// [`ControlError::UnknownController`] for a name not in [`NAMES`]; the controller's own setting
/// errors otherwise ([`ControlError::NotAvailable`] for an oracle asked to plan).
pub fn build(name: &str, settings: Settings) -> Result<Box<dyn Controller>, ControlError> {
    match ENTRIES.iter().find(|e| e.name == name) {
        Some(e) => (e.build)(settings),
        None => Err(ControlError::UnknownController {
            name: name.to_string(),
            known: NAMES.to_vec(),
        }),
    }
}

/// Builds the controller `name` as [`build`] does, except that the oracles may plan from
/// `offline`'s exact curves: `oracle` with `objective`, `step`, `per_phase` (instead of
/// `targets`/`schedule`), `slab-oracle` with `per_phase` (instead of `targets`), both with
/// `max_moves` where they take it.
///
/// # Errors
/// As [`build`]; an oracle's plan that cannot be made.
pub fn build_with(
    name: &str,
    mut settings: Settings,
    offline: &dyn Offline,
) -> Result<Built, ControlError> {
    let one = |controller| Built {
        controller,
        phases: Vec::new(),
    };
    match name {
        "oracle" if !settings.has("targets") && !settings.has("schedule") => {
            let objective = match settings.string("objective", "")?.as_str() {
                "" => None,
                o => Some(
                    o.parse::<Objective>()
                        .map_err(|_| ControlError::BadSetting {
                            controller: name.into(),
                            key: "objective".into(),
                            value: o.into(),
                            expected: "misses, latency or hits".into(),
                        })?,
                ),
            };
            let step = settings.u64("step", 0)?;
            let per_phase = settings.bool("per_phase", false)?;
            settings.finish()?;
            let plans = offline.pool_plans(objective, step, per_phase)?;
            phased(plans, |p| Box::new(oracle::Oracle::new(p)))
        }
        "slab-oracle" if !settings.has("targets") => {
            let max_moves = settings.u64("max_moves", 64)?;
            let per_phase = settings.bool("per_phase", false)?;
            settings.finish()?;
            let plans = offline.class_plans(per_phase)?;
            phased(plans, |p| {
                Box::new(slab_oracle::SlabOracle::new(p, max_moves))
            })
        }
        _ => build(name, settings).map(one),
    }
}

/// One controller per phase's plan.
fn phased<P>(
    plans: Vec<P>,
    make: impl Fn(P) -> Box<dyn Controller>,
) -> Result<Built, ControlError> {
    let mut it = plans.into_iter().map(make);
    let controller = it.next().ok_or_else(|| ControlError::NotAvailable {
        name: "oracle".into(),
        why: "the planner returned no plan".into(),
    })?;
    Ok(Built {
        controller,
        phases: it.collect(),
    })
}
