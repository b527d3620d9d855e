//! EAET (Pan et al., APSys'18 and pRedis, SoCC'19; docs/models.md §4): AET on a byte clock, with SET
//! size changes and DEL, using the paper's Eq. 5 (deletions above a block pull it up):
//!
//! ```text
//! v(t) = max(0, [cold_bytes + Σ_{i>t} access[i] − Σ_{i<t} delete[i]] / N)
//! ```
//!
//! With reference sampling (see [`crate::Aet`]), a chosen operation remembers `(clock, size)`; the
//! key's next operation is classified with the table of docs/models.md §4 using the remembered size as
//! the old size `b`. A chosen DEL makes the next operation a "key not seen" one. Samples pending at
//! the end count as cold first accesses, as reads in the stream's GET share.
//!
//! The clock advances by the bytes each operation touches: a GET its size, a SET `max(new, old)`
//! when the old size is known (sampled keys) and the new size otherwise, a DEL the tuple's size.
//! In object mode every size is 1 and EAET is AET with SET/DEL semantics.

use crate::aet::{Kinetic, RT_SUB_BITS, mix64};
use crate::hist::Hist;
use crate::profiler::{check_capacities, metric_weight, unit_weight};
use crate::sampling::{PendingFilter, RefSampler, U64Map};
use crate::{Metric, Mrc, MrcError, Op, Profiler, Unit};

#[derive(Debug, Clone, Copy)]
struct Entry {
    clock: u64,
    size: u32,
    deleted: bool,
}

/// The EAET profiler.
pub struct Eaet {
    unit: Unit,
    metric: Metric,
    sampler: RefSampler,
    filter: PendingFilter,
    pending: U64Map<Entry>,
    access_rth: Hist,
    delete_rth: Hist,
    read_rth: Hist,
    cold_bytes: f64,
    cold_reads: f64,
    clock: u64,
    accesses: u64,
    gets: u64,
    get_weight: f64,
    get_clock: f64,
    /// Most pending samples ([`Eaet::with_budget`]); `None`: a fixed rate.
    budget: Option<usize>,
    /// The budget never halves the rate below this ([`Eaet::set_min_rate`]).
    min_rate: f64,
    seed: u64,
}

impl Eaet {
    /// An EAET profiler with reference-sampling rate `rate`.
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] unless `rate ∈ (0, 1]`.
    pub fn new(rate: f64, unit: Unit, metric: Metric, seed: u64) -> Result<Self, MrcError> {
        Ok(Self {
            unit,
            metric,
            sampler: RefSampler::new(rate, seed)?,
            filter: PendingFilter::new(),
            pending: U64Map::default(),
            access_rth: Hist::new(RT_SUB_BITS),
            delete_rth: Hist::new(RT_SUB_BITS),
            read_rth: Hist::new(RT_SUB_BITS),
            cold_bytes: 0.0,
            cold_reads: 0.0,
            clock: 0,
            accesses: 0,
            gets: 0,
            get_weight: 0.0,
            get_clock: 0.0,
            budget: None,
            min_rate: 0.0,
            seed,
        })
    }

    /// An EAET profiler that keeps at most `budget` pending samples, as [`crate::Aet::with_budget`]
    /// does: its rate starts at `max_rate` and halves whenever the pending table outgrows
    /// `budget`; each pending sample then stays with probability ½ (by a hash of its key and
    /// clock) and the reuse-time histograms and cold weights are halved, so what was counted
    /// before weighs as if sampled at the new rate. A tenant of fewer keys than the budget is
    /// followed whole at `max_rate` 1.
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] unless `max_rate ∈ (0, 1]`; [`MrcError::InvalidFixedSize`] for a
    /// zero budget.
    pub fn with_budget(
        max_rate: f64,
        budget: usize,
        unit: Unit,
        metric: Metric,
        seed: u64,
    ) -> Result<Self, MrcError> {
        if budget == 0 {
            return Err(MrcError::InvalidFixedSize { size: budget });
        }
        let mut e = Self::new(max_rate, unit, metric, seed)?;
        e.budget = Some(budget);
        Ok(e)
    }

    /// Keeps a budgeted rate at or above `min_rate` (default 0): the budget halves the rate only
    /// while the half is at least this, so a pool never is sampled more sparsely than `min_rate`
    /// (its pending samples may then outgrow the budget). No effect without a budget.
    pub fn set_min_rate(&mut self, min_rate: f64) {
        self.min_rate = min_rate.max(0.0);
    }

    /// The current reference-sampling rate.
    pub fn rate(&self) -> f64 {
        self.sampler.rate()
    }

    /// Pending samples (at most the budget after each access, with one).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Halves the rate, keeping each pending sample with probability ½ and halving what was
    /// counted.
    #[cold]
    fn halve(&mut self) {
        let rate = self.sampler.rate() / 2.0;
        let salt = self.seed ^ rate.to_bits();
        self.pending
            .retain(|k, e| mix64(k ^ mix64(e.clock ^ salt)) & 1 == 0);
        self.rebuild_filter();
        self.access_rth.scale(0.5);
        self.delete_rth.scale(0.5);
        self.read_rth.scale(0.5);
        self.cold_bytes *= 0.5;
        self.cold_reads *= 0.5;
        self.sampler = RefSampler::new(rate, salt).expect("half of a valid rate is valid");
    }

    #[cold]
    fn rebuild_filter(&mut self) {
        self.filter
            .rebuild(self.pending.len(), self.pending.keys().map(|&k| mix64(k)));
    }

    /// Classifies this operation against the key's pending sample (docs/models.md §4's table).
    #[cold]
    fn settle(&mut self, key: u64, a: u64, op: Op, mw: f64) -> Option<u64> {
        let e = self.pending.remove(&key)?;
        if self.filter.remove(self.pending.len()) {
            self.rebuild_filter();
        }
        let b = e.size as u64;
        if e.deleted {
            match op {
                Op::Get => {
                    self.cold_bytes += a as f64;
                    self.cold_reads += mw;
                }
                Op::Set => self.cold_bytes += a as f64,
                Op::Del => {}
            }
            return None;
        }
        let rt = self.clock - e.clock;
        match op {
            Op::Get => {
                self.access_rth.add(rt, a as f64);
                self.read_rth.add(rt, mw);
            }
            Op::Set => {
                if a > b {
                    self.access_rth.add(rt, b as f64);
                    self.cold_bytes += (a - b) as f64;
                } else {
                    self.access_rth.add(rt, a as f64);
                    if b > a {
                        self.delete_rth.add(rt, (b - a) as f64);
                    }
                }
            }
            Op::Del => self.delete_rth.add(rt, b as f64),
        }
        Some(b)
    }
}

impl Profiler for Eaet {
    fn name(&self) -> String {
        match self.budget {
            Some(b) => format!("eaet(r={}, budget={b})", self.sampler.rate()),
            None => format!("eaet(r={})", self.sampler.rate()),
        }
    }
    fn unit(&self) -> Unit {
        self.unit
    }
    fn metric(&self) -> Metric {
        self.metric
    }

    #[inline]
    fn access(&mut self, key: u64, size: u32, op: Op) {
        self.accesses += 1;
        let a = unit_weight(self.unit, size) as u64;
        let mw = metric_weight(self.metric, size);
        if op == Op::Get {
            self.gets += 1;
            self.get_weight += mw;
        }
        let h = mix64(key);
        let old = if self.filter.maybe(h) {
            self.settle(key, a, op, mw)
        } else {
            None
        };
        let chosen = self.sampler.choose();
        if chosen {
            self.pending.insert(
                key,
                Entry {
                    clock: self.clock,
                    size: a as u32,
                    deleted: op == Op::Del,
                },
            );
            if self.filter.insert(h, self.pending.len()) {
                self.rebuild_filter();
            }
            if let Some(b) = self.budget {
                while self.pending.len() > b
                    && self.sampler.rate() > f64::MIN_POSITIVE
                    && self.sampler.rate() / 2.0 >= self.min_rate
                {
                    self.halve();
                }
            }
        }
        let tick = match (op, old) {
            (Op::Set, Some(b)) => a.max(b),
            (Op::Del, Some(b)) => b,
            _ => a,
        };
        self.clock += tick;
        if op == Op::Get {
            self.get_clock += tick as f64;
        }
    }

    fn accesses(&self) -> u64 {
        self.accesses
    }

    fn working_set(&self) -> f64 {
        // Cold bytes per byte of clock, times the clock: the estimated footprint.
        let (acc, del): (f64, f64) = (
            self.access_rth.finite_total(),
            self.delete_rth.finite_total(),
        );
        let pend: f64 = self
            .pending
            .values()
            .filter(|e| !e.deleted)
            .map(|e| e.size as f64)
            .sum();
        let cold = self.cold_bytes + pend;
        let n = cold + acc + del;
        if n <= 0.0 {
            return 0.0;
        }
        cold / n * self.clock as f64
    }

    fn decay(&mut self, factor: f64) -> Result<(), MrcError> {
        crate::profiler::check_decay("eaet", factor)?;
        self.access_rth.scale(factor);
        self.delete_rth.scale(factor);
        self.read_rth.scale(factor);
        self.cold_bytes *= factor;
        self.cold_reads *= factor;
        Ok(())
    }

    fn mrc(&self, capacities: &[f64]) -> Result<Mrc, MrcError> {
        check_capacities(capacities)?;
        let get_share = if self.accesses == 0 {
            0.0
        } else {
            self.gets as f64 / self.accesses as f64
        };
        let avg_get_w = if self.gets == 0 {
            0.0
        } else {
            self.get_weight / self.gets as f64
        };
        let mut cold = self.cold_bytes;
        let mut cold_reads = self.cold_reads;
        for e in self.pending.values().filter(|e| !e.deleted) {
            cold += e.size as f64;
            cold_reads += get_share * avg_get_w;
        }
        let k = Kinetic {
            access: &self.access_rth,
            delete: Some(&self.delete_rth),
            read: &self.read_rth,
            cold,
            cold_reads,
        };
        let m = k.solve(capacities);
        Mrc::new(
            self.unit,
            self.metric,
            capacities.iter().copied().zip(m).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_eq5() {
        // docs/models.md §4: GET a(100), GET b(50), GET a(100), DEL b, GET a(100).
        // Full (unsampled) forward form: the same histograms; mr = 1 for c ≤ 130.375, 0.5 above.
        let mut e = Eaet::new(1.0, Unit::Bytes, Metric::Requests, 1).unwrap();
        let (a, b) = (1u64, 2u64);
        e.access(a, 100, Op::Get);
        e.access(b, 50, Op::Get);
        e.access(a, 100, Op::Get);
        e.access(b, 50, Op::Del);
        e.access(a, 100, Op::Get);
        assert_eq!(e.clock, 400);
        assert_eq!(e.access_rth.finite_total(), 200.0);
        assert_eq!(e.delete_rth.finite_total(), 50.0);
        let m = e.mrc(&[100.0, 130.0, 131.0, 1000.0]).unwrap();
        let got: Vec<f64> = m.points().iter().map(|p| p.1).collect();
        // Pending at the end: a (last GET) -> cold 100 bytes + 0.8 of a read; b's DEL -> nothing.
        // cold_bytes = 100, N = 100 + 200 + 50 = 350 (the forward form's cold differs from the
        // backward one's 150: first accesses a, b vs pending a).
        // v(t<150) = (100+200)/350, I(150) = 150·300/350 = 128.57.
        assert_eq!(got[0], 1.0);
        let reads = 2.0 + 0.8;
        assert!((got[3] - 0.8 / reads).abs() < 1e-9, "{got:?}");
        assert!((got[2] - 0.8 / reads).abs() < 1e-9, "{got:?}");
    }

    #[test]
    fn set_growth_and_shrink_are_split() {
        let mut e = Eaet::new(1.0, Unit::Bytes, Metric::Requests, 1).unwrap();
        e.access(1, 100, Op::Set);
        e.access(1, 150, Op::Set); // grow: access 100, cold 50
        e.access(1, 40, Op::Set); // shrink: access 40, delete 110
        assert_eq!(e.access_rth.finite_total(), 140.0);
        assert_eq!(e.delete_rth.finite_total(), 110.0);
        assert_eq!(e.cold_bytes, 50.0);
        assert_eq!(e.clock, 100 + 150 + 150);
    }
}
