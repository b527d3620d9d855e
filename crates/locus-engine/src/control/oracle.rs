//! The `oracle` controller (being written, issue #4).

use super::{ControlError, Controller, Settings};

/// Builds the controller from its settings.
pub(crate) fn build(_s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    super::not_built("oracle")
}
