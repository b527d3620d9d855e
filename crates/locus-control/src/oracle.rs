//! The offline optimum as a controller (`oracle`): it imposes a fixed partition (pages per
//! pool), or a per-phase schedule `(at_request, targets)`, computed offline from exact curves by
//! [`crate::plan`]. Built from settings it takes `targets = "p0,p1,…"` or
//! `schedule = "0:p0,p1;500000:q0,q1"` (pages), or, where the builder is given an
//! [`crate::Offline`] planner (the simulator), `objective`, `step` and `per_phase`.
//!
//! The partition is static, the pages nobody has claimed yet are not: until memory is first
//! full, every decision lends free pages ([`Decision::lend_free_pages`]), so in the cold start a
//! pool that has filled its share grows into the share of a pool that has not filled its own
//! yet, and gives those pages back when their owner needs them. Once memory has been full the
//! free pages are what the engine released for pools below their target, and are kept for them
//! (lent, they would go to whichever pool misses first, and be released again). Without it the plan would leave memory idle that any dynamic
//! partition (whose targets follow the pools' fill) uses, and a controller that only partitions
//! could beat the best static partition by its cold start alone (issue 16: pRedis on YCSB F).

use locus_engine::control::{ControlError, ControlView, Controller, Decision, Settings};

use crate::plan::PlanError;

/// Settings of the `oracle` controller (pages per pool, computed offline).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct OracleConfig {
    /// `(at_request, targets)`, requests increasing, the first at 0: from `at_request` data-path
    /// accesses on (as the engine counts them for the controller), `targets` are in force.
    pub schedule: Vec<(u64, Vec<u64>)>,
}

/// The offline optimum as a controller: imposes the targets of its schedule.
#[derive(Clone, Debug)]
pub struct Oracle {
    cfg: OracleConfig,
    /// Memory has not been full at any decision yet: free pages are lent.
    filling: bool,
}

impl Oracle {
    /// One fixed partition (pages per pool, in pool order) for the whole run.
    pub fn new(targets: Vec<u64>) -> Oracle {
        Oracle {
            cfg: OracleConfig {
                schedule: vec![(0, targets)],
            },
            filling: true,
        }
    }

    /// A per-phase schedule: `(at_request, targets)`.
    ///
    /// # Errors
    /// [`PlanError::BadSchedule`] if it is empty, does not start at request 0, or its requests
    /// do not increase strictly.
    pub fn with_schedule(schedule: Vec<(u64, Vec<u64>)>) -> Result<Oracle, PlanError> {
        check_schedule(&schedule)?;
        Ok(Oracle {
            cfg: OracleConfig { schedule },
            filling: true,
        })
    }

    /// The schedule.
    pub fn config(&self) -> &OracleConfig {
        &self.cfg
    }

    /// The targets in force after `requests` accesses, and the phase index.
    pub fn targets_at(&self, requests: u64) -> (usize, &[u64]) {
        let i = self
            .cfg
            .schedule
            .partition_point(|(at, _)| *at <= requests)
            .saturating_sub(1);
        (i, &self.cfg.schedule[i].1)
    }
}

fn check_schedule(schedule: &[(u64, Vec<u64>)]) -> Result<(), PlanError> {
    let bad = |reason: &str| PlanError::BadSchedule {
        reason: reason.to_string(),
    };
    match schedule.first() {
        None => return Err(bad("no entries")),
        Some((at, _)) if *at != 0 => return Err(bad("the first entry must be at request 0")),
        _ => {}
    }
    if schedule.windows(2).any(|w| w[1].0 <= w[0].0) {
        return Err(bad("requests must increase strictly"));
    }
    Ok(())
}

impl Controller for Oracle {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn on_access(&mut self, _a: &locus_engine::control::Access) {}

    fn observes(&self) -> bool {
        false
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        if view.pages_used >= view.pages_total {
            self.filling = false;
        }
        let lend = self.filling;
        let (phase, targets) = self.targets_at(view.requests);
        let mut t = targets.to_vec();
        t.resize(view.pools.len(), 0);
        Decision {
            pool_pages: Some(t),
            notes: vec![("oracle.phase".into(), phase as f64)],
            lend_free_pages: lend,
            ..Decision::default()
        }
    }
}

/// Parses `"p0,p1,…"` (pages).
fn parse_pages(list: &str) -> Option<Vec<u64>> {
    let v: Result<Vec<u64>, _> = list
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|x| x.trim().parse::<u64>())
        .collect();
    v.ok().filter(|v| !v.is_empty())
}

/// Parses `"0:p0,p1;500000:q0,q1"`.
fn parse_schedule(s: &str) -> Option<Vec<(u64, Vec<u64>)>> {
    s.split(';')
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (at, pages) = e.split_once(':')?;
            Some((at.trim().parse::<u64>().ok()?, parse_pages(pages)?))
        })
        .collect()
}

/// Builds the controller from its settings: `targets = "p0,p1,…"` (pages, pool order) or
/// `schedule = "0:p0,p1;500000:q0,q1"` (exactly one of them).
pub(crate) fn build(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let targets = s.string("targets", "")?;
    let schedule = s.string("schedule", "")?;
    let bad = |key: &str, value: &str, expected: &str| ControlError::BadSetting {
        controller: "oracle".into(),
        key: key.into(),
        value: value.into(),
        expected: expected.into(),
    };
    let oracle = match (targets.trim().is_empty(), schedule.trim().is_empty()) {
        (false, true) => Oracle::new(parse_pages(&targets).ok_or_else(|| {
            bad(
                "targets",
                &targets,
                "a comma-separated list of pages per pool",
            )
        })?),
        (true, false) => {
            let sch = parse_schedule(&schedule).ok_or_else(|| {
                bad(
                    "schedule",
                    &schedule,
                    "entries 'at_request:p0,p1,…' separated by ';'",
                )
            })?;
            Oracle::with_schedule(sch).map_err(|e| bad("schedule", &schedule, &e.to_string()))?
        }
        _ => {
            return Err(bad(
                "targets",
                &targets,
                "exactly one of 'targets' (pages per pool) or 'schedule' (the oracle's partition \
                 is computed offline, e.g. by the simulator with control::plan)",
            ));
        }
    };
    s.finish()?;
    Ok(Box::new(oracle))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use locus_common::VirtualClock;

    use super::*;
    use crate::build as build_named;
    use locus_engine::Engine;
    use locus_engine::config::{EngineConfig, TenantConfig};
    use locus_engine::control::{ControlConfig, Interval};

    #[test]
    fn settings_parse_and_reject() {
        let mk = |pairs: &[(&str, &str)]| {
            Settings::new(
                "oracle",
                pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            )
        };
        assert!(build(mk(&[("targets", "3, 4")])).is_ok());
        assert!(build(mk(&[("schedule", "0:1,2; 100:2,1")])).is_ok());
        for bad in [
            vec![],
            vec![("targets", "3,x")],
            vec![("targets", "1"), ("schedule", "0:1")],
            vec![("schedule", "5:1,2")],
            vec![("schedule", "0:1;0:2")],
        ] {
            assert!(
                matches!(build(mk(&bad)), Err(ControlError::BadSetting { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(
            build(mk(&[("targets", "1"), ("typo", "1")])),
            Err(ControlError::UnknownSetting { .. })
        ));
    }

    #[test]
    fn schedule_drives_engine_targets() {
        let clock = VirtualClock::new(0);
        let mut e = Engine::new(
            EngineConfig {
                maxmemory: 64 * 4096,
                page_size: 4096,
                ..EngineConfig::default()
            },
            Arc::new(clock),
        )
        .unwrap();
        let a = e.add_tenant(TenantConfig::new("a")).unwrap();
        let b = e.add_tenant(TenantConfig::new("b")).unwrap();
        let s = Settings::new(
            "oracle",
            [("schedule".to_string(), "0:48,16;4000:16,48".to_string())],
        );
        e.set_controller(
            build_named("oracle", s).unwrap(),
            ControlConfig {
                interval: Interval::Requests(500),
                max_moves: 64,
                offload: false,
            },
        );
        let v = vec![7u8; 100];
        for i in 0..8000u64 {
            let t = if i % 2 == 0 { a } else { b };
            let key = format!("k{}", i % 3000);
            e.set(t, key.as_bytes(), &v, Default::default()).unwrap();
            if i == 3900 {
                assert_eq!(e.targets(), vec![Some(48), Some(16)]);
                let sa = e.tenant_stats(a);
                assert!(sa.pages >= 40, "{sa:?}");
            }
        }
        assert_eq!(e.targets(), vec![Some(16), Some(48)]);
        let rec = e.control_records();
        assert_eq!(
            rec.last().unwrap().notes[0],
            ("oracle.phase".to_string(), 1.0)
        );
        assert!(e.tenant_stats(b).pages >= 40);
    }
}
