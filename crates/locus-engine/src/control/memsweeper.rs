//! The `memsweeper-max` and `memsweeper-fair` controllers (being written, issue #4).

use super::{ControlError, Controller, Settings};

/// Builds `memsweeper-max`.
pub(crate) fn build_max(_s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    super::not_built("memsweeper-max")
}

/// Builds `memsweeper-fair`.
pub(crate) fn build_fair(_s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    super::not_built("memsweeper-fair")
}
