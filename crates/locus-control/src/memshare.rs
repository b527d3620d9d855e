//! The `memshare` controller: Memshare's credit-based sharing (Cidon et al., ATC '17) with
//! Cliffhanger's small shadow queues, as mPart (ISMM '18, §2) describes it and MemSweeper
//! (ISMM '22, §2.1) uses it as a baseline.
//!
//! Each pool keeps a *short* shadow queue of the keys it evicted last (`shadow_fraction` of
//! memory, a few pages: Memshare's 10 MB queue per application). A GET miss that hits it would
//! have been a hit with a little more memory: the pool earns a credit. Once per decision interval
//! the credits earned since the last one move up to `step` pages to the pool with the most, from
//! the pool with the fewest (`victim = "credits"`) or from the pool of lowest need, target over
//! pages in use (`victim = "need"`, Memshare's rule as paper 004 states it), never below a
//! floor (`locus_alloc::Credits` documents both rules). Memshare moves a fixed credit of memory
//! per shadow hit as it happens; batching per interval keeps the engine's bounded-moves
//! contract.
//!
//! ```text
//!   evictions ─► short shadow queue ─► shadow hit ─► credit(pool) ─► Credits::round
//!                 (a few pages deep)                                   │ (from, to, units)
//!                                                   targets: from -= units, to += units
//! ```
//!
//! This is a *gradient* method: it only sees hits within its shadow depth of the current
//! allocation. A tenant whose working set is a loop longer than its allocation plus the shadow
//! depth never hits its shadow queue and never earns a credit, however many hits a large enough
//! allocation would bring: the far-off cliff MemSweeper finds and this controller does not (which
//! `experiments/memsweeper-cliff.toml` measures). Setting `shadow_fraction = 1` makes the same
//! credit rule see as far as MemSweeper does (the ablation).
//!
//! Moves are page targets, as in [`super::memsweeper`] (the engine converges to them); the first
//! targets are equal shares, or `initial_shares` of memory (mPart's three initial allocations).

use locus_alloc::Credits;

use crate::shadow::{PoolShadows, ShadowLimits};
use locus_engine::control::{
    Access, ControlError, ControlView, Controller, Decision, Evicted, Settings,
};

/// Which pool gives the pages a round moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemshareVictim {
    /// The pool that earned the fewest credits (`locus_alloc::Credits::round`).
    Credits,
    /// The pool of lowest need, target / pages in use (`locus_alloc::Credits::round_by_need`).
    Need,
}

/// Settings of `memshare`.
#[derive(Clone, Debug, PartialEq)]
pub struct MemshareConfig {
    /// Shadow queue depth as a fraction of `maxmemory` (item bytes); Memshare's is a few pages.
    pub shadow_fraction: f64,
    /// Keys per shadow queue.
    pub shadow_entries: u64,
    /// Pages one round of credits (one per decision) may move; 0 = `pages_total / 64`.
    pub step: u64,
    /// Victim rule: the pool with the fewest credits, or the lowest need (paper 004).
    pub victim: MemshareVictim,
    /// No pool's target goes below this many pages (nor below its configured floor).
    pub min_pages: u64,
    /// Initial targets as shares of memory (`floor(w_i × pages_total)` pages, pool order; empty
    /// = equal shares), mPart's `initial_shares`.
    pub initial_shares: Vec<f64>,
}

impl Default for MemshareConfig {
    fn default() -> Self {
        MemshareConfig {
            shadow_fraction: 0.02,
            shadow_entries: 1 << 16,
            step: 0,
            victim: MemshareVictim::Credits,
            min_pages: 1,
            initial_shares: Vec::new(),
        }
    }
}

impl MemshareConfig {
    /// Reads the settings (defaults for missing keys) and rejects unknown keys.
    ///
    /// # Errors
    /// [`ControlError::BadSetting`] for a value out of range, [`ControlError::UnknownSetting`]
    /// for a key this controller does not read.
    pub fn from_settings(mut s: Settings) -> Result<Self, ControlError> {
        let d = MemshareConfig::default();
        let cfg = MemshareConfig {
            shadow_fraction: s.f64("shadow_fraction", d.shadow_fraction)?,
            shadow_entries: s.u64("shadow_entries", d.shadow_entries)?,
            step: s.u64("step", d.step)?,
            victim: match s.string("victim", "credits")?.as_str() {
                "credits" => MemshareVictim::Credits,
                "need" => MemshareVictim::Need,
                other => {
                    return Err(ControlError::BadSetting {
                        controller: s.controller().to_string(),
                        key: "victim".into(),
                        value: other.into(),
                        expected: "credits or need".into(),
                    });
                }
            },
            min_pages: s.u64("min_pages", d.min_pages)?,
            initial_shares: s.f64_list("initial_shares", &[])?,
        };
        let name = s.controller().to_string();
        super::memsweeper::check_shares(&name, &cfg.initial_shares)?;
        s.finish()?;
        let bad = |key: &str, value: String, expected: &str| ControlError::BadSetting {
            controller: name.clone(),
            key: key.to_string(),
            value,
            expected: expected.to_string(),
        };
        if !(cfg.shadow_fraction > 0.0 && cfg.shadow_fraction <= 64.0) {
            return Err(bad(
                "shadow_fraction",
                cfg.shadow_fraction.to_string(),
                "a number in (0, 64]",
            ));
        }
        if cfg.shadow_entries == 0 {
            return Err(bad("shadow_entries", "0".into(), "at least 1"));
        }
        Ok(cfg)
    }
}

/// The Memshare controller.
#[derive(Debug)]
pub struct Memshare {
    cfg: MemshareConfig,
    shadows: PoolShadows,
    credits: Option<Credits>,
    targets: Vec<u64>,
}

impl Memshare {
    /// A controller with `cfg`.
    pub fn new(cfg: MemshareConfig) -> Self {
        let shadows = PoolShadows::new(ShadowLimits {
            shadow_entries: cfg.shadow_entries as usize,
            recency_rate: None,
            recency_entries: 1,
            recency_keys: 1,
        });
        Memshare {
            cfg,
            shadows,
            credits: None,
            targets: Vec::new(),
        }
    }

    /// The targets in force (pages per pool; empty before the first decision).
    pub fn targets(&self) -> &[u64] {
        &self.targets
    }
}

impl Controller for Memshare {
    fn name(&self) -> &'static str {
        "memshare"
    }

    fn on_access(&mut self, a: &Access) {
        self.shadows.on_access(a);
    }

    fn on_evict(&mut self, e: &Evicted) {
        self.shadows.on_evict(e);
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let n = view.pools.len();
        if n == 0 || view.page_size == 0 {
            return Decision::default();
        }
        let floors: Vec<u64> = view
            .pools
            .iter()
            .map(|p| p.min_pages.max(self.cfg.min_pages))
            .collect();
        if self.targets.len() != n {
            let total = view.pages_total;
            self.targets = if self.cfg.initial_shares.is_empty() {
                (0..n as u64)
                    .map(|i| total / n as u64 + u64::from(i < total % n as u64))
                    .collect()
            } else {
                super::memsweeper::share_targets(&self.cfg.initial_shares, view, &floors)
            };
            let step = if self.cfg.step == 0 {
                (view.pages_total / 64).max(1)
            } else {
                self.cfg.step
            };
            self.credits = Some(Credits::new(n, step));
            let depth =
                (view.pages_total as f64 * view.page_size as f64 * self.cfg.shadow_fraction) as u64;
            self.shadows.set_max_bytes(depth.max(1));
        }
        let mut notes = Vec::new();
        let hits = self.shadows.drain_new_hits();
        let Some(credits) = self.credits.as_mut() else {
            return Decision::default();
        };
        for (i, h) in hits.iter().enumerate().take(n) {
            if *h > 0 {
                credits.record_shadow_hit(i, *h as f64);
            }
            notes.push((format!("pool{i}.shadow_hits"), *h as f64));
        }
        let mut moved = 0u64;
        let round = match self.cfg.victim {
            MemshareVictim::Credits => credits.try_round(&self.targets, &floors),
            MemshareVictim::Need => {
                let in_use: Vec<u64> = view
                    .pools
                    .iter()
                    .map(|p| p.charged_bytes.div_ceil(view.page_size))
                    .collect();
                credits.round_by_need(&self.targets, &in_use, &floors)
            }
        };
        if let Ok(Some((from, to, units))) = round {
            let cap = view.pools[to].max_pages.unwrap_or(u64::MAX);
            let units = units
                .min(self.targets[from].saturating_sub(floors[from]))
                .min(cap.saturating_sub(self.targets[to]));
            if from != to {
                self.targets[from] -= units;
                self.targets[to] += units;
                moved = units;
            }
        }
        notes.push(("moved_pages".to_string(), moved as f64));
        for i in 0..n {
            if let Some(p) = self.shadows.pool(i) {
                notes.push((format!("pool{i}.shadow_keys"), p.shadow.len() as f64));
            }
        }
        Decision {
            pool_pages: Some(self.targets.clone()),
            notes,
            ..Decision::default()
        }
    }
}

/// Builds the controller from its settings.
pub(crate) fn build(s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    Ok(Box::new(Memshare::new(MemshareConfig::from_settings(s)?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::streams::{Stream, items_per_page, run};

    #[test]
    fn settings_are_typed_and_checked() {
        let s = |pairs: &[(&str, &str)]| {
            Settings::new(
                "memshare",
                pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            )
        };
        let cfg = MemshareConfig::from_settings(s(&[
            ("step", "8"),
            ("victim", "need"),
            ("initial_shares", "0.5,0.25"),
        ]))
        .unwrap();
        assert_eq!((cfg.step, cfg.victim), (8, MemshareVictim::Need));
        assert_eq!(cfg.initial_shares, vec![0.5, 0.25]);
        for bad in [
            ("step", "-1"),
            ("victim", "anyone"),
            ("shadow_fraction", "0"),
        ] {
            assert!(
                matches!(
                    MemshareConfig::from_settings(s(&[bad])),
                    Err(ControlError::BadSetting { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            crate::build("memshare", s(&[("credit", "1")])),
            Err(ControlError::UnknownSetting { .. })
        ));
    }

    /// The scenario of `memsweeper`'s test: a loop of 30 pages with a 24-page share next to a
    /// tenant that needs 8. Memshare's short shadow queue never sees the loop's reuses, so the
    /// loop earns no credits and keeps missing; with a shadow queue as deep as memory the same
    /// credit rule finds it (the ablation: depth, not the credit rule, is what hides the cliff).
    #[test]
    fn memshare_misses_a_far_off_cliff_unless_its_shadow_is_deep() {
        let per_page = items_per_page();
        let tenants = [
            (Stream::Loop(30 * per_page), 1),
            (Stream::Uniform(8 * per_page), 1),
        ];
        let (out, e) = run(Some("memshare"), &[], &tenants, 48, 120_000, 4000, 7);
        eprintln!("memshare: {out:?}");
        assert!(
            out.targets[0].unwrap() <= 24 && out.tail_hit_ratio[0] < 0.1,
            "short shadow: the loop never gains: {out:?}"
        );
        let shadow_hits: f64 = e
            .control_records()
            .iter()
            .flat_map(|r| r.notes.iter())
            .filter(|(k, _)| k == "pool0.shadow_hits")
            .map(|(_, v)| v)
            .sum();
        assert_eq!(shadow_hits, 0.0, "the loop's reuses lie beyond the shadow");
        e.check_invariants();

        let (deep, _) = run(
            Some("memshare"),
            &[("shadow_fraction", "1")],
            &tenants,
            48,
            120_000,
            4000,
            7,
        );
        eprintln!("memshare deep: {deep:?}");
        assert!(
            deep.targets[0].unwrap() >= 31 && deep.tail_hit_ratio[0] > 0.9,
            "deep shadow: credits find the loop: {deep:?}"
        );
    }
}
