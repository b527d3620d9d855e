//! `[dump_load]`: the knobs of pRedis's periodicity detector, shared by every tenant whose
//! `[[tenant]] dump_load` is `"auto"` (see [`crate::dumpload`]). A schedule needs none of them.

use locus_control::{DumpLoadConfig, DumpLoadMode};
use serde::{Deserialize, Serialize};

use super::ServerConfig;

/// `[dump_load]` (pRedis's values for a real day are the defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DumpLoadSection {
    /// Length of a counting bucket (pRedis: 60 s).
    pub bucket: String,
    /// Buckets in the window the valley and the swing are judged over (pRedis: 10).
    pub window: usize,
    /// A bucket within this fraction of the window's range above its minimum is a valley bucket.
    pub valley_tolerance: f64,
    /// Consecutive valley buckets before a dump.
    pub valley_buckets: usize,
    /// The swing condition: `max - min > swing * mean` over the window (pRedis: 0.5).
    pub swing: f64,
    /// Misses of a dumped tenant (with a rising rate) that load it back (pRedis: 100).
    pub load_misses: u64,
    /// How long before a predicted rise the load is made ("0s": no prediction).
    pub lead: String,
}

impl Default for DumpLoadSection {
    fn default() -> Self {
        let d = DumpLoadConfig::default();
        Self {
            bucket: "60s".to_string(),
            window: d.window,
            valley_tolerance: d.valley_tolerance,
            valley_buckets: d.valley_buckets,
            swing: d.swing,
            load_misses: d.load_misses,
            lead: "120s".to_string(),
        }
    }
}

fn micros(key: &str, s: &str) -> Result<u64, String> {
    locus_common::parse_duration(s)
        .map(|d| d.as_micros() as u64)
        .map_err(|e| format!("dump_load.{key}: {s:?}: {e}"))
}

impl DumpLoadSection {
    /// The detector's configuration.
    ///
    /// # Errors
    /// Every problem, each with its key path.
    pub fn detector_config(&self) -> Result<DumpLoadConfig, Vec<String>> {
        let mut p = Vec::new();
        let bucket_us = micros("bucket", &self.bucket).unwrap_or_else(|e| {
            p.push(e);
            1
        });
        if bucket_us == 0 {
            p.push("dump_load.bucket: must be > 0".to_string());
        }
        let lead_us = micros("lead", &self.lead).unwrap_or_else(|e| {
            p.push(e);
            0
        });
        if self.window < 2 {
            p.push(format!("dump_load.window: {} is not >= 2", self.window));
        }
        if self.valley_buckets == 0 {
            p.push("dump_load.valley_buckets: must be >= 1".to_string());
        }
        if !(0.0..=1.0).contains(&self.valley_tolerance) {
            p.push(format!(
                "dump_load.valley_tolerance: {} is not in [0, 1]",
                self.valley_tolerance
            ));
        }
        if !(self.swing.is_finite() && self.swing >= 0.0) {
            p.push(format!("dump_load.swing: {} is not >= 0", self.swing));
        }
        if !p.is_empty() {
            return Err(p);
        }
        Ok(DumpLoadConfig {
            bucket_us,
            window: self.window,
            valley_tolerance: self.valley_tolerance,
            valley_buckets: self.valley_buckets,
            swing: self.swing,
            load_misses: self.load_misses,
            lead_us,
        })
    }
}

impl ServerConfig {
    /// Every tenant's `dump_load` setting, in [`ServerConfig::tenant_sections`] order.
    ///
    /// # Errors
    /// Every problem, each with its key path (`tenant[i].dump_load`).
    pub fn dump_load_modes(&self) -> Result<Vec<DumpLoadMode>, Vec<String>> {
        let mut p = Vec::new();
        let modes = self
            .tenant_sections()
            .iter()
            .enumerate()
            .map(|(i, t)| match t.dump_load.as_deref() {
                None => DumpLoadMode::Never,
                Some(s) => s.parse().unwrap_or_else(|e| {
                    p.push(format!("tenant[{i}].dump_load ({}): {e}", t.name));
                    DumpLoadMode::Never
                }),
            })
            .collect();
        if p.is_empty() { Ok(modes) } else { Err(p) }
    }

    /// The problems of `[dump_load]` and the tenants' `dump_load` settings.
    pub(super) fn dump_load_problems(&self, p: &mut Vec<String>) {
        if let Err(e) = self.dump_load.detector_config() {
            p.extend(e);
        }
        if let Err(e) = self.dump_load_modes() {
            p.extend(e);
        }
        let dumps = self
            .tenant_sections()
            .iter()
            .any(|t| t.dump_load.as_deref().is_some_and(|m| m.trim() != "never"));
        if dumps && !self.snapshot.enabled() {
            p.push(
                "tenant.dump_load: dumping a tenant needs [snapshot] dir (the dump files go there)"
                    .to_string(),
            );
        }
    }
}
