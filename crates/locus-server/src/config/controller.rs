//! `[controller]`: the memory controller by name (from `locus-control`'s registry), its
//! interval, moves per interval, offload, and `[controller.settings]`.

use locus_control as control;
use locus_engine::control::{ControlConfig, ControlError, Controller, Interval, Settings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::*;

/// `[controller]`: which memory controller runs, how often, and its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ControllerSection {
    /// A name of [`locus_control::NAMES`], or `none` (the `memory.partition` arbiter).
    pub name: String,
    /// Decisions every this many data-path requests (`100000`, `"100000req"`) or this long
    /// (`"1s"`, `"500ms"`).
    pub interval: TextOrNumber,
    /// Pages released (by pools above target) plus explicit page moves, per decision.
    pub max_moves: u32,
    /// Run the controller's profiling on a thread of its own, fed in batches, instead of on the
    /// request path (the default: no request runs a profiler; a thread that falls behind loses
    /// batches, counted in INFO `controller_dropped_events`). `false`: on the request path, every
    /// access profiled.
    pub offload: bool,
    /// `[controller.settings]`: the controller's own settings; values of any TOML type
    /// (arrays become comma-separated lists).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, toml::Value>,
}

impl Default for ControllerSection {
    fn default() -> Self {
        Self {
            name: NO_CONTROLLER.to_string(),
            interval: TextOrNumber(DEFAULT_CONTROL_INTERVAL.to_string()),
            max_moves: ControlConfig::default().max_moves,
            offload: true,
            settings: BTreeMap::new(),
        }
    }
}

impl ControllerSection {
    /// Whether a controller is configured (`name` other than `none`).
    pub fn enabled(&self) -> bool {
        !self.name.eq_ignore_ascii_case(NO_CONTROLLER)
    }

    /// The settings as text pairs (locus-common's one rule, the simulator's too), or every
    /// value that cannot be one (with its key path).
    pub(super) fn settings_pairs(&self) -> Result<Vec<(String, String)>, Vec<String>> {
        locus_common::settings_from_toml(&self.settings).map_err(|bad| {
            bad.iter()
                .map(|e| format!("controller.settings.{e}"))
                .collect()
        })
    }

    /// The decision interval.
    ///
    /// # Errors
    /// The problem, prefixed `controller.interval`.
    pub fn parsed_interval(&self) -> Result<Interval, String> {
        self.interval
            .0
            .parse::<Interval>()
            .map_err(|e| format!("controller.interval: {e}"))
    }

    /// How the engine runs the controller.
    ///
    /// # Errors
    /// The problem, prefixed `controller.interval`.
    pub fn control_config(&self) -> Result<ControlConfig, String> {
        Ok(ControlConfig {
            interval: self.parsed_interval()?,
            max_moves: self.max_moves,
            offload: self.offload,
        })
    }

    /// Builds the configured controller (`None` for `none`).
    ///
    /// # Errors
    /// Every problem with its key path (`controller.name: ...`, `controller.settings.k: ...`).
    pub fn build(&self) -> Result<Option<Box<dyn Controller>>, Vec<String>> {
        if !self.enabled() {
            return if self.settings.is_empty() {
                Ok(None)
            } else {
                Err(vec![format!(
                    "controller.settings: settings given but controller.name is \"{NO_CONTROLLER}\" (choose one of {})",
                    control::NAMES.join(", ")
                )])
            };
        }
        let pairs = self.settings_pairs()?;
        let name = self.name.to_ascii_lowercase();
        control::build(&name, Settings::new(&name, pairs))
            .map(Some)
            .map_err(|e| vec![control_problem(&e)])
    }
}

/// A controller construction error as a configuration problem with its key path.
pub(super) fn control_problem(e: &ControlError) -> String {
    match e {
        ControlError::UnknownController { name, known } => format!(
            "controller.name: unknown controller {name:?} (one of {NO_CONTROLLER}, {})",
            known.join(", ")
        ),
        ControlError::NotAvailable { .. } => format!("controller.name: {e}"),
        ControlError::BadSetting {
            controller,
            key,
            value,
            expected,
        } => format!(
            "controller.settings.{key}: {value:?} is not valid for controller '{controller}': expected {expected}"
        ),
        ControlError::UnknownSetting {
            controller,
            key,
            known,
        } => format!(
            "controller.settings.{key}: controller '{controller}' has no such setting (its settings: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ),
    }
}
