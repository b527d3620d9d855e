//! Exact LRU stack distances (Mattson), by objects or by bytes, with exact DEL (docs/models.md §1).

use crate::hist::Hist;
use crate::profiler::{dist_sub_bits, metric_weight, mrc_from_hist, unit_weight};
use crate::stack::ExactStack;
use crate::{Metric, Mrc, MrcError, Op, Profiler, Unit};

/// The exact LRU profiler: one pass gives the whole curve.
///
/// GET records its distance then moves the key to the top; SET moves it to the top with its new
/// size without recording; DEL leaves a hole where the key was (see the stack module): the
/// curve then equals an LRU cache simulation with deletes at every size, which removing the key
/// outright (docs/models.md §1's wording) does not, because it would bring back keys the cache had
/// already evicted. Property-tested against LRU and byte-LRU simulators.
#[derive(Debug, Clone)]
pub struct ExactLru {
    unit: Unit,
    metric: Metric,
    stack: ExactStack,
    hist: Hist,
    accesses: u64,
    peak: u64,
}

impl ExactLru {
    /// An empty profiler.
    pub fn new(unit: Unit, metric: Metric) -> Self {
        Self {
            unit,
            metric,
            stack: ExactStack::new(),
            hist: Hist::new(dist_sub_bits(unit)),
            accesses: 0,
            peak: 0,
        }
    }
}

impl Profiler for ExactLru {
    fn name(&self) -> String {
        "exact".into()
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
        match op {
            Op::Get => {
                let w = metric_weight(self.metric, size);
                match self.stack.access(key, unit_weight(self.unit, size)) {
                    Some(d) => self.hist.add(d, w),
                    None => self.hist.inf += w,
                }
            }
            Op::Set => {
                self.stack.access(key, unit_weight(self.unit, size));
            }
            Op::Del => {
                self.stack.delete(key);
            }
        }
        self.peak = self.peak.max(self.stack.total());
    }

    fn accesses(&self) -> u64 {
        self.accesses
    }

    fn working_set(&self) -> f64 {
        self.peak as f64
    }

    fn mrc(&self, capacities: &[f64]) -> Result<Mrc, MrcError> {
        mrc_from_hist(&self.hist, 0.0, 1.0, self.unit, self.metric, capacities)
    }

    fn decay(&mut self, factor: f64) -> Result<(), MrcError> {
        crate::profiler::check_decay("exact", factor)?;
        self.hist.scale(factor);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(p: &mut dyn Profiler, keys: &str, sizes: &[u32]) {
        for (i, k) in keys.bytes().enumerate() {
            p.access(k as u64, sizes.get(i).copied().unwrap_or(1), Op::Get);
        }
    }

    #[test]
    fn worked_example() {
        // docs/models.md §1: a b c b a d a -> mr(1)=1, mr(2)=5/7, mr(3)=mr(4)=4/7.
        let mut p = ExactLru::new(Unit::Objects, Metric::Requests);
        feed(&mut p, "abcbada", &[]);
        let m = p.mrc(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        let want = [1.0, 5.0 / 7.0, 4.0 / 7.0, 4.0 / 7.0];
        for ((_, got), w) in m.points().iter().zip(want) {
            assert!((got - w).abs() < 1e-12, "{m:?}");
        }
        assert_eq!(p.working_set(), 4.0);
        // Bytes: reuse distances 50, 60, 50.
        let mut b = ExactLru::new(Unit::Bytes, Metric::Requests);
        feed(&mut b, "abcbada", &[10, 20, 30, 20, 10, 40, 10]);
        let m = b.mrc(&[49.0, 50.0, 59.0, 60.0]).unwrap();
        let want = [1.0, 5.0 / 7.0, 5.0 / 7.0, 4.0 / 7.0];
        for ((_, got), w) in m.points().iter().zip(want) {
            assert!((got - w).abs() < 1e-12, "{m:?}");
        }
    }

    #[test]
    fn del_makes_the_next_access_cold_and_set_is_not_counted() {
        let mut p = ExactLru::new(Unit::Objects, Metric::Requests);
        p.access(1, 1, Op::Set);
        p.access(1, 1, Op::Get); // hit at 1
        p.access(1, 1, Op::Del);
        p.access(1, 1, Op::Get); // cold
        let m = p.mrc(&[1.0, 10.0]).unwrap();
        assert_eq!(m.points(), &[(1.0, 0.5), (10.0, 0.5)]);
    }

    #[test]
    fn byte_miss_ratio_weights_by_size() {
        let mut p = ExactLru::new(Unit::Objects, Metric::Bytes);
        p.access(1, 100, Op::Get); // cold, 100 bytes
        p.access(2, 300, Op::Get); // cold, 300 bytes
        p.access(1, 100, Op::Get); // d = 2
        let m = p.mrc(&[2.0]).unwrap();
        assert!((m.points()[0].1 - 400.0 / 500.0).abs() < 1e-12);
    }
}
