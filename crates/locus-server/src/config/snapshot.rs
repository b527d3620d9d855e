//! `[snapshot]`: where snapshots go, when they are taken, and whether a start loads them (see
//! [`crate::snapshot`] for the file format and how BGSAVE runs).
//!
//! Off by default (`dir = ""`): a cache's data can always be rebuilt from its backend, and a
//! memcached user expects nothing on disk. With a directory set, the point is a warm restart,
//! so a clean stop (SHUTDOWN, SIGTERM, SIGINT) saves and a start loads unless told otherwise;
//! periodic saves (`save` rules, Redis's `save` points) stay off until asked for, because a
//! fork copies page tables under the engine lock and doubles the memory of pages written
//! meanwhile.

use serde::{Deserialize, Serialize};

/// `[snapshot]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnapshotSection {
    /// Directory of the snapshot files (one per tenant); "" = snapshots off (SAVE and BGSAVE
    /// answer an error, nothing is loaded).
    pub dir: String,
    /// Redis's `save` points: `"<seconds> <changes>"` each; a BGSAVE starts when at least
    /// `changes` writes happened and `seconds` passed since the last save. Empty: none.
    pub save: Vec<String>,
    /// Save in the foreground when the server stops cleanly (SHUTDOWN without NOSAVE, SIGTERM,
    /// SIGINT), as Redis does when it has save points.
    pub on_shutdown: bool,
    /// Load every tenant's snapshot at start-up.
    pub load: bool,
}

impl Default for SnapshotSection {
    fn default() -> Self {
        Self {
            dir: String::new(),
            save: Vec::new(),
            on_shutdown: true,
            load: true,
        }
    }
}

impl SnapshotSection {
    /// Whether snapshots are on.
    pub fn enabled(&self) -> bool {
        !self.dir.trim().is_empty()
    }

    /// The `save` points as (seconds, changes).
    ///
    /// # Errors
    /// A message with the key path for a rule that is not two integers, or whose seconds are 0.
    pub fn save_points(&self) -> Result<Vec<(u64, u64)>, String> {
        self.save
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut it = r.split_whitespace().map(str::parse::<u64>);
                match (it.next(), it.next(), it.next()) {
                    (Some(Ok(s)), Some(Ok(c)), None) if s > 0 => Ok((s, c)),
                    _ => Err(format!(
                        "snapshot.save[{i}]: {r:?} is not \"<seconds> <changes>\" with seconds > 0 \
                         (e.g. \"3600 1\")"
                    )),
                }
            })
            .collect()
    }

    /// Every problem of the section, each with its key path.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if let Err(e) = self.save_points() {
            p.push(e);
        }
        if !self.enabled() && !self.save.is_empty() {
            p.push("snapshot.save: save points need snapshot.dir".to_string());
        }
        p
    }
}
