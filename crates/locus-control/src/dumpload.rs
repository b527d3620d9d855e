//! pRedis's automatic dump/load of periodic tenants (pRedis, section 4, "Auto-Dump/Load in
//! Periodic Pattern"): the deciding half, pure and driven by a virtual clock.
//!
//! ```text
//!  requests of tenant T ─► count per bucket ─► PeriodDetector ─► Some(Dump) / Some(Load) / None
//!  misses of a dumped T ─► consecutive-miss count ───────────┘        │
//!                                                                    ▼
//!                            the driver (simulator or server) acts through the engine:
//!                            Dump: the tenant's hottest items → stash, memory to the others
//!                            Load: the stash → the engine, ahead of the tenant's next peak
//! ```
//!
//! The paper counts each penalty class's accesses per 60 s and calls a class periodic when its
//! peak and valley rates differ by more than half the average (`max - min > 0.5 avg`), each lasts
//! a while (10 minutes), and its long reuse time is of the order of the peak-to-peak interval.
//! A class whose count comes "very close to the minimum of the past 10 minutes" is dumped; a dumped
//! class that sees 100 consecutive misses is loaded back. Here the bucket and window lengths are
//! settings (an experiment compresses a day into minutes), and one step goes beyond the paper's
//! reactive load: once two rises of the same tenant have been seen, their distance is the period
//! and the next load is made `lead` before the predicted rise, so the items are back before the
//! peak's first requests. The third condition (long reuse) is not checked: the detector sees
//! rates, not reuse times.

use std::collections::VecDeque;
use std::str::FromStr;

/// What the driver should do for one tenant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DumpLoadAction {
    /// Move the tenant's items out of memory into its stash, but for the most recent `keep`
    /// fraction of them (what its valley rate still uses: the window's minimum over its maximum
    /// count under `auto`; 0 under a schedule).
    Dump {
        /// Fraction of the items (most recent first) left in memory, in `[0, 1]`.
        keep: f64,
    },
    /// Put the stashed items back.
    Load,
}

impl DumpLoadAction {
    /// How many of a tenant's `n` items (walked least recent first) a dump with `keep` moves
    /// out: all but the most recent `keep` share. The simulator and the server both count so.
    pub fn dumped_count(n: usize, keep: f64) -> usize {
        n - (n as f64 * keep.clamp(0.0, 1.0)).round() as usize
    }
}

/// An operator-given schedule: idle windows repeating every `period_us`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleSchedule {
    /// Length of the cycle (µs of the clock the driver uses).
    pub period_us: u64,
    /// Idle windows `[start, end)` as offsets into the cycle (µs), sorted, non-overlapping.
    pub idle_us: Vec<(u64, u64)>,
    /// How long before an idle window ends the items are loaded back (µs).
    pub lead_us: u64,
}

impl IdleSchedule {
    /// Whether the tenant should be dumped at `now_us`: inside an idle window, and not within
    /// `lead_us` of its end.
    pub fn dumped_at(&self, now_us: u64) -> bool {
        let off = now_us % self.period_us.max(1);
        self.idle_us
            .iter()
            .any(|&(s, e)| off >= s && off.saturating_add(self.lead_us) < e)
    }
}

/// The per-tenant setting `dump_load`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DumpLoadMode {
    /// Never dump (the default: plain eviction).
    #[default]
    Never,
    /// Detect periodicity from the request rate and dump/load on its own.
    Auto,
    /// Dump in the operator's idle windows.
    Schedule(IdleSchedule),
}

/// `DumpLoadMode`'s text form was not understood.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "dump_load '{input}': {reason} (expected \"auto\", \"never\" or \"every 240s idle 120s-240s[,…] [lead 4s]\")"
)]
pub struct DumpLoadParseError {
    /// The text.
    pub input: String,
    /// What is wrong.
    pub reason: String,
}

fn dur_us(s: &str) -> Result<u64, String> {
    locus_common::parse_duration(s)
        .map(|d| d.as_micros() as u64)
        .map_err(|e| e.to_string())
}

impl FromStr for DumpLoadMode {
    type Err = DumpLoadParseError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason: String| DumpLoadParseError {
            input: input.to_string(),
            reason,
        };
        let words: Vec<&str> = input.split_whitespace().collect();
        match words.as_slice() {
            ["auto"] => return Ok(Self::Auto),
            ["never"] => return Ok(Self::Never),
            _ => {}
        }
        let (period, idle, lead) = match words.as_slice() {
            ["every", p, "idle", w] => (*p, *w, None),
            ["every", p, "idle", w, "lead", l] => (*p, *w, Some(*l)),
            _ => return Err(err("unknown form".into())),
        };
        let period_us = dur_us(period).map_err(&err)?;
        if period_us == 0 {
            return Err(err("the period must be > 0".into()));
        }
        let lead_us = lead.map(dur_us).transpose().map_err(&err)?.unwrap_or(0);
        let mut idle_us = Vec::new();
        for w in idle.split(',') {
            let (a, b) = w
                .split_once('-')
                .ok_or_else(|| err(format!("window '{w}' is not START-END")))?;
            let (a, b) = (dur_us(a).map_err(&err)?, dur_us(b).map_err(&err)?);
            if a >= b || b > period_us {
                return Err(err(format!(
                    "window '{w}' must have start < end <= the period"
                )));
            }
            idle_us.push((a, b));
        }
        idle_us.sort_unstable();
        if idle_us.windows(2).any(|p| p[0].1 > p[1].0) {
            return Err(err("idle windows overlap".into()));
        }
        Ok(Self::Schedule(IdleSchedule {
            period_us,
            idle_us,
            lead_us,
        }))
    }
}

/// The detector's knobs (pRedis's values in the comments, for a real day).
#[derive(Clone, Debug, PartialEq)]
pub struct DumpLoadConfig {
    /// Length of a counting bucket (µs; pRedis: 60 s).
    pub bucket_us: u64,
    /// Buckets in the window the valley and the swing are judged over (pRedis: 10 minutes = 10).
    pub window: usize,
    /// A count within this fraction of the window's range above its minimum is "close to the
    /// minimum" (a valley bucket).
    pub valley_tolerance: f64,
    /// Consecutive valley buckets before a dump (the valley must last).
    pub valley_buckets: usize,
    /// The swing condition: `max - min > swing * mean` over the window (pRedis: 0.5).
    pub swing: f64,
    /// Consecutive misses of a dumped tenant that load it back (pRedis: 100).
    pub load_misses: u64,
    /// How long before a predicted rise the load is made (µs; 0 disables prediction).
    pub lead_us: u64,
}

impl Default for DumpLoadConfig {
    fn default() -> Self {
        Self {
            bucket_us: 60_000_000,
            window: 10,
            valley_tolerance: 0.1,
            valley_buckets: 2,
            swing: 0.5,
            load_misses: 100,
            lead_us: 120_000_000,
        }
    }
}

/// One tenant's detector (see the module docs). Feed it [`PeriodDetector::request`] and
/// [`PeriodDetector::miss`] per request and ask [`PeriodDetector::tick`] after each; all times
/// are the caller's clock, so a run on a virtual clock is deterministic.
#[derive(Clone, Debug)]
pub struct PeriodDetector {
    mode: DumpLoadMode,
    cfg: DumpLoadConfig,
    /// Start of the current bucket and its count.
    bucket_start: Option<u64>,
    count: u64,
    /// Counts of the last `window` finished buckets.
    history: VecDeque<u64>,
    valley_run: usize,
    dumped: bool,
    misses: u64,
    /// Times of the last two loads (rises), oldest first.
    rises: VecDeque<u64>,
    /// The predicted time of the next rise.
    predicted: Option<u64>,
    /// A bucket count above this, while dumped, is a rise (half way from the valley to the peak
    /// of the window at the dump).
    rise_count: u64,
    /// Whether the next valley may dump: false from a load until a bucket above `rise_count`
    /// (a load made ahead of the rise is still in the valley, which must not dump it again).
    armed: bool,
}

impl PeriodDetector {
    /// A detector for `mode`.
    pub fn new(mode: DumpLoadMode, cfg: DumpLoadConfig) -> Self {
        Self {
            mode,
            cfg,
            bucket_start: None,
            count: 0,
            history: VecDeque::new(),
            valley_run: 0,
            dumped: false,
            misses: 0,
            rises: VecDeque::new(),
            predicted: None,
            rise_count: 0,
            armed: true,
        }
    }

    /// The tenant's setting.
    pub fn mode(&self) -> &DumpLoadMode {
        &self.mode
    }

    /// Whether the tenant is dumped now.
    pub fn dumped(&self) -> bool {
        self.dumped
    }

    /// The predicted time of the next rise, once a period has been learned.
    pub fn predicted_rise_us(&self) -> Option<u64> {
        self.predicted
    }

    /// Counts one request of the tenant at `now_us`.
    pub fn request(&mut self, now_us: u64) {
        self.roll(now_us);
        self.count += 1;
    }

    /// Counts `n` requests of the tenant at `now_us` at once (a server feeding the detector from
    /// its counters once per tick).
    pub fn requests(&mut self, now_us: u64, n: u64) {
        self.roll(now_us);
        self.count += n;
    }

    /// Counts `n` GET misses of the tenant at once.
    pub fn misses(&mut self, n: u64) {
        self.misses += n;
    }

    /// Counts one GET of the tenant (misses since the last dump).
    pub fn get(&mut self, hit: bool) {
        if !hit {
            self.misses += 1;
        }
    }

    /// Closes the buckets that ended before `now_us` (idle buckets count 0).
    fn roll(&mut self, now_us: u64) {
        let b = self.cfg.bucket_us.max(1);
        let start = *self.bucket_start.get_or_insert(now_us - now_us % b);
        if now_us < start + b {
            return;
        }
        let mut s = start;
        while now_us >= s + b {
            self.close(self.count);
            self.count = 0;
            s += b;
        }
        self.bucket_start = Some(s);
    }

    fn close(&mut self, count: u64) {
        self.history.push_back(count);
        while self.history.len() > self.cfg.window.max(1) {
            self.history.pop_front();
        }
        let full = self.history.len() >= self.cfg.window.max(1);
        let (min, max) = self
            .history
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), &c| (lo.min(c), hi.max(c)));
        let mean = self.history.iter().sum::<u64>() as f64 / self.history.len() as f64;
        let range = (max - min) as f64;
        let swings = full && range > self.cfg.swing * mean;
        if count > self.rise_count {
            self.armed = true;
        }
        let near_min = count as f64 <= min as f64 + self.cfg.valley_tolerance * range;
        self.valley_run = if swings && near_min {
            self.valley_run + 1
        } else {
            0
        };
    }

    /// The action due at `now_us` (after the request at `now_us` was counted), if any; the
    /// caller MUST carry it out (the detector assumes it was).
    pub fn tick(&mut self, now_us: u64) -> Option<DumpLoadAction> {
        self.roll(now_us);
        let want_dumped = match &self.mode {
            DumpLoadMode::Never => return None,
            DumpLoadMode::Schedule(s) => s.dumped_at(now_us),
            DumpLoadMode::Auto if self.dumped => {
                let predicted = self
                    .predicted
                    .is_some_and(|at| now_us.saturating_add(self.cfg.lead_us) >= at);
                // pRedis loads after 100 consecutive misses; here after `load_misses` misses since
                // the dump *and* a bucket count half way back to the peak: the valley's own
                // misses (it refills its small hot set) would trigger the first alone, and its
                // hits break any run of consecutive misses.
                let rose = self.misses >= self.cfg.load_misses && self.count > self.rise_count;
                !(predicted || rose)
            }
            DumpLoadMode::Auto => self.armed && self.valley_run >= self.cfg.valley_buckets.max(1),
        };
        match (self.dumped, want_dumped) {
            (false, true) => {
                self.dumped = true;
                self.misses = 0;
                let (min, max) = self
                    .history
                    .iter()
                    .fold((u64::MAX, 0), |(lo, hi), &c| (lo.min(c), hi.max(c)));
                let min = min.min(max);
                self.rise_count = min + (max - min) / 2;
                // A schedule dumps at the start of its window, before any quiet bucket: the
                // operator said the tenant is idle, so everything goes.
                let keep = if max > 0 && self.mode == DumpLoadMode::Auto {
                    min as f64 / max as f64
                } else {
                    0.0
                };
                Some(DumpLoadAction::Dump { keep })
            }
            (true, false) => {
                self.dumped = false;
                self.valley_run = 0;
                self.armed = false;
                self.note_rise(now_us);
                Some(DumpLoadAction::Load)
            }
            _ => None,
        }
    }

    /// Records a load and predicts the next one from the last two (the period).
    fn note_rise(&mut self, now_us: u64) {
        // A predicted load happens `lead` early: record the rise it stands for.
        let rise = match self.predicted {
            Some(at) if now_us.saturating_add(self.cfg.lead_us) >= at => at,
            _ => now_us,
        };
        self.rises.push_back(rise);
        while self.rises.len() > 2 {
            self.rises.pop_front();
        }
        self.predicted = match (self.rises.front(), self.rises.back()) {
            (Some(&a), Some(&b)) if b > a && self.cfg.lead_us > 0 => Some(b + (b - a)),
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> DumpLoadConfig {
        DumpLoadConfig {
            bucket_us: 1_000,
            window: 10,
            valley_tolerance: 0.1,
            valley_buckets: 2,
            swing: 0.5,
            load_misses: 5,
            lead_us: 3_000,
        }
    }

    /// Drives `d` with `rate(t_ms)` requests per 1 ms bucket for `ms` ms; every GET misses when
    /// the tenant is dumped. Returns (time, action) pairs.
    fn drive(
        d: &mut PeriodDetector,
        ms: u64,
        rate: impl Fn(u64) -> u64,
    ) -> Vec<(u64, DumpLoadAction)> {
        let mut out = Vec::new();
        for t in 0..ms {
            let n = rate(t);
            for i in 0..n {
                let now = t * 1_000 + i * 1_000 / n;
                d.request(now);
                d.get(!d.dumped());
                if let Some(a) = d.tick(now) {
                    out.push((now, a));
                }
            }
            if n == 0
                && let Some(a) = d.tick(t * 1_000)
            {
                out.push((t * 1_000, a));
            }
        }
        out
    }

    /// 100 ms days: busy (100/bucket) for 50 ms, quiet (5/bucket) for 50 ms.
    fn diurnal(t: u64) -> u64 {
        if t % 100 < 50 { 100 } else { 5 }
    }

    #[test]
    fn parses_the_three_forms() {
        assert_eq!("auto".parse::<DumpLoadMode>(), Ok(DumpLoadMode::Auto));
        assert_eq!("never".parse::<DumpLoadMode>(), Ok(DumpLoadMode::Never));
        let s: DumpLoadMode = "every 240s idle 120s-230s lead 4s".parse().unwrap();
        assert_eq!(
            s,
            DumpLoadMode::Schedule(IdleSchedule {
                period_us: 240_000_000,
                idle_us: vec![(120_000_000, 230_000_000)],
                lead_us: 4_000_000,
            })
        );
        for bad in [
            "sometimes",
            "every 0s idle 1s-2s",
            "every 10s idle 5s-3s",
            "every 10s idle 1s-20s",
            "every 10s idle 1s-5s,4s-6s",
            "every 10s idle 1s",
        ] {
            assert!(bad.parse::<DumpLoadMode>().is_err(), "{bad}");
        }
    }

    #[test]
    fn dumps_in_each_valley_and_loads_before_each_peak_once_the_period_is_known() {
        let mut d = PeriodDetector::new(DumpLoadMode::Auto, cfg());
        let acts = drive(&mut d, 500, diurnal);
        let dumps: Vec<u64> = acts
            .iter()
            .filter(|a| matches!(a.1, DumpLoadAction::Dump { .. }))
            .map(|a| a.0 / 1_000)
            .collect();
        let loads: Vec<u64> = acts
            .iter()
            .filter(|a| a.1 == DumpLoadAction::Load)
            .map(|a| a.0 / 1_000)
            .collect();
        // A dump early in each quiet half (after the valley has lasted 2 buckets).
        assert!(dumps.len() >= 4, "{acts:?}");
        for &t in &dumps {
            assert!((50..60).contains(&(t % 100)), "dump at {t} ms: {acts:?}");
        }
        // The first loads react to misses at the rise; later ones come `lead` ahead of it.
        assert!((100..102).contains(&loads[0]), "{loads:?}");
        for &t in &loads[2..] {
            assert_eq!(
                t % 100,
                97,
                "load at {t} ms should be 3 ms before the rise: {loads:?}"
            );
        }
    }

    #[test]
    fn a_flat_rate_is_never_dumped() {
        let mut d = PeriodDetector::new(DumpLoadMode::Auto, cfg());
        assert_eq!(drive(&mut d, 500, |_| 50), vec![]);
        // Noise of ±20% around the mean is not a swing of half the mean either.
        let mut d = PeriodDetector::new(DumpLoadMode::Auto, cfg());
        assert_eq!(drive(&mut d, 500, |t| 45 + (t * 7919 % 11)), vec![]);
    }

    #[test]
    fn never_and_schedule() {
        let mut d = PeriodDetector::new(DumpLoadMode::Never, cfg());
        assert_eq!(drive(&mut d, 300, diurnal), vec![]);
        let s = "every 100ms idle 50ms-100ms lead 3ms".parse().unwrap();
        let mut d = PeriodDetector::new(s, cfg());
        let acts = drive(&mut d, 300, diurnal);
        let want: Vec<(u64, DumpLoadAction)> = (0..3)
            .flat_map(|day| {
                [
                    (day * 100 + 50, DumpLoadAction::Dump { keep: 0.0 }),
                    (day * 100 + 97, DumpLoadAction::Load),
                ]
            })
            .collect();
        let got: Vec<(u64, DumpLoadAction)> = acts.iter().map(|&(t, a)| (t / 1_000, a)).collect();
        assert_eq!(got, want);
    }
}
