//! Footprint (Xiang et al., PACT'11) with LAMA's MRC conversion (docs/models.md §5):
//!
//! ```text
//! fp(w) = m − [ Σ_i (f_i − w)⁺ + Σ_i (l_i − w)⁺ + Σ_{t>w} (t − w)·r_t ] / (n − w + 1)
//! mr(c) = 1 − Σ_{t : fp(t) ≤ c} r_t / n          (≤, not the printed <)
//! ```
//!
//! `f_i` is item `i`'s first access time, `l_i = n + 1 − last_i`, `r_t` the reuse-time histogram.
//! All `w` are swept once in increasing order, so the curve costs O(n). A DEL ends an item's
//! lifetime: a later access starts a new item. Optional spatial sampling (untested in docs/models.md)
//! runs the model on the sampled sub-stream, scales capacities by `R` and applies `_adj`.

use crate::profiler::check_capacities;
use crate::sampling::{SpatialFilter, U64Map};
use crate::{Metric, Mrc, MrcError, Op, Profiler, Unit};

/// The footprint profiler (object capacities, request miss ratio).
pub struct Footprint {
    filter: SpatialFilter,
    live: U64Map<(u64, u64)>, // key -> (first, last), sampled logical time
    ended: Vec<(u64, u64)>,   // lifetimes ended by DEL
    rt: Vec<u64>,             // rt[t] = reuses with reuse time t
    n: u64,
    accesses: u64,
    full: u64,
    adjust: bool,
}

impl Footprint {
    /// A footprint profiler on the spatially sampled sub-stream at `rate` (1.0: every key).
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] for a bad rate.
    pub fn new(rate: f64, seed: u64) -> Result<Self, MrcError> {
        Ok(Self {
            filter: SpatialFilter::new(rate, seed)?,
            live: U64Map::default(),
            ended: Vec::new(),
            rt: Vec::new(),
            n: 0,
            accesses: 0,
            full: 0,
            adjust: true,
        })
    }

    /// The footprint `fp(w)` for `w = 0..=n` (for tests and plots of the footprint itself).
    pub fn footprint_curve(&self) -> Vec<f64> {
        let mut out = Vec::new();
        self.sweep(|_, fp, _| {
            out.push(fp);
            true
        });
        out
    }

    /// The reuse-time histogram of the sampled stream: `r[t]` reuses had reuse time `t` (in
    /// sampled accesses; trailing zeros possible). With [`Footprint::footprint_curve`] it lets a
    /// caller build its own conversion (e.g. LAMA's window-edge correction).
    pub fn reuse_times(&self) -> &[u64] {
        &self.rt
    }

    /// Sampled accesses in the window (`n` of the footprint formula).
    pub fn sampled_len(&self) -> u64 {
        self.n
    }

    /// Unsampled GETs and SETs seen since the last restart (`_adj`'s `full`).
    pub fn full_len(&self) -> u64 {
        self.full
    }

    /// The spatial sampling rate in force.
    pub fn rate(&self) -> f64 {
        self.filter.rate()
    }

    /// Distinct sampled keys the profiler holds (live, and ended by DEL): its memory.
    pub fn tracked(&self) -> usize {
        self.live.len() + self.ended.len()
    }

    /// Restarts (as `decay(0.0)`) sampling at `rate` from now on, the same keys' hashes.
    ///
    /// # Errors
    /// [`MrcError::InvalidRate`] for a bad rate (the profiler is then unchanged).
    pub fn restart_at(&mut self, rate: f64) -> Result<(), MrcError> {
        self.filter = SpatialFilter::new(rate, self.filter.seed())?;
        self.clear();
        Ok(())
    }

    /// Bytes the profiler's tables hold (their capacity, a hash table's control bytes
    /// included).
    pub fn bytes(&self) -> u64 {
        let entry = std::mem::size_of::<(u64, (u64, u64))>() + 1;
        let buckets = if self.live.capacity() == 0 {
            0
        } else {
            (self.live.capacity() * 8 / 7).next_power_of_two()
        };
        (buckets * entry
            + self.ended.capacity() * std::mem::size_of::<(u64, u64)>()
            + self.rt.capacity() * std::mem::size_of::<u64>()) as u64
    }

    /// Gives back the memory of a window larger than `keys` distinct keys: the tables keep at
    /// most room for `keys` (the window's own content stays).
    pub fn shrink_to(&mut self, keys: usize) {
        if self.live.capacity() > 2 * keys.max(self.live.len()) {
            self.live.shrink_to(keys.max(self.live.len()));
        }
        if self.ended.capacity() > 2 * keys.max(self.ended.len()) {
            self.ended.shrink_to(keys.max(self.ended.len()));
        }
    }

    /// Forgets the window: lifetimes, reuse times and counts (the rate stays).
    fn clear(&mut self) {
        self.live.clear();
        self.ended.clear();
        self.rt.clear();
        self.n = 0;
        self.full = 0;
    }

    /// Calls `f(w, fp(w), hits(w))` for `w = 0, 1, …, n` where `hits(w) = Σ_{t ≤ w} r_t`; stops
    /// when `f` returns false.
    fn sweep(&self, mut f: impl FnMut(u64, f64, f64) -> bool) {
        let n = self.n;
        let size = n as usize + 2;
        let mut fc = vec![0u32; size];
        let mut lc = vec![0u32; size];
        let items = self.live.values().chain(self.ended.iter());
        let mut m = 0u64;
        for &(first, last) in items {
            fc[first as usize] += 1;
            lc[(n + 1 - last) as usize] += 1;
            m += 1;
        }
        // Running "count of values > w" and "sum of values > w" for f, l and r.
        let (mut c_f, mut s_f, mut c_l, mut s_l) = (m as f64, 0.0f64, m as f64, 0.0f64);
        for (v, (&a, &b)) in fc.iter().zip(&lc).enumerate() {
            s_f += a as f64 * v as f64;
            s_l += b as f64 * v as f64;
        }
        let mut c_r: f64 = self.rt.iter().map(|&x| x as f64).sum();
        let mut s_r: f64 = self
            .rt
            .iter()
            .enumerate()
            .map(|(t, &x)| t as f64 * x as f64)
            .sum();
        let mut hits = 0.0;
        for w in 0..=n {
            let wu = w as usize;
            // Remove values equal to w (they are no longer > w).
            c_f -= fc[wu] as f64;
            s_f -= fc[wu] as f64 * w as f64;
            c_l -= lc[wu] as f64;
            s_l -= lc[wu] as f64 * w as f64;
            let r_w = self.rt.get(wu).copied().unwrap_or(0) as f64;
            c_r -= r_w;
            s_r -= r_w * w as f64;
            hits += r_w;
            let wf = w as f64;
            let fp = if w == 0 {
                0.0
            } else {
                let bracket = (s_f - wf * c_f) + (s_l - wf * c_l) + (s_r - wf * c_r);
                m as f64 - bracket / (n - w + 1) as f64
            };
            if !f(w, fp, hits) {
                return;
            }
        }
    }
}

impl Profiler for Footprint {
    fn name(&self) -> String {
        format!("footprint(R={:.4})", self.filter.rate())
    }
    fn unit(&self) -> Unit {
        Unit::Objects
    }
    fn metric(&self) -> Metric {
        Metric::Requests
    }

    #[inline]
    fn access(&mut self, key: u64, _size: u32, op: Op) {
        self.accesses += 1;
        if op != Op::Del {
            self.full += 1;
        }
        if !self.filter.sampled(key) {
            return;
        }
        if op == Op::Del {
            if let Some(life) = self.live.remove(&key) {
                self.ended.push(life);
            }
            return;
        }
        self.n += 1;
        let t = self.n;
        match self.live.get_mut(&key) {
            Some(e) => {
                let rt = (t - e.1) as usize;
                if rt >= self.rt.len() {
                    self.rt.resize((rt + 1).max(self.rt.len() * 2), 0);
                }
                self.rt[rt] += 1;
                e.1 = t;
            }
            None => {
                self.live.insert(key, (t, t));
            }
        }
    }

    fn accesses(&self) -> u64 {
        self.accesses
    }

    fn working_set(&self) -> f64 {
        (self.live.len() + self.ended.len()) as f64 / self.filter.rate()
    }

    fn decay(&mut self, factor: f64) -> Result<(), MrcError> {
        crate::profiler::check_decay("footprint", factor)?;
        if factor != 0.0 {
            return Err(MrcError::InvalidDecay {
                model: "footprint".into(),
                factor,
                reason: "the footprint formula needs whole windows; only 0 (restart) is supported"
                    .into(),
            });
        }
        self.clear();
        Ok(())
    }

    fn mrc(&self, capacities: &[f64]) -> Result<Mrc, MrcError> {
        check_capacities(capacities)?;
        let r = self.filter.rate();
        let n = self.n as f64;
        // _adj: the sampled stream should have had full·R references; the difference hits.
        let expected = self.full as f64 * r;
        let zero = if self.adjust && r < 1.0 {
            expected - n
        } else {
            0.0
        };
        let total = n + zero;
        let mut hits_at = vec![0.0; capacities.len()];
        let mut ci = 0;
        let mut prev_hits = 0.0;
        // Largest t with fp(t) ≤ c·R (fp is non-decreasing): hits = Σ_{t' ≤ t} r_t'.
        self.sweep(|_, fp, hits| {
            while ci < capacities.len() && fp > capacities[ci] * r + 1e-9 {
                hits_at[ci] = prev_hits;
                ci += 1;
            }
            prev_hits = hits;
            ci < capacities.len()
        });
        for h in hits_at.iter_mut().skip(ci) {
            *h = prev_hits;
        }
        let points = capacities
            .iter()
            .zip(hits_at)
            .map(|(&c, h)| {
                let m = if total > 0.0 {
                    1.0 - (zero + h) / total
                } else {
                    1.0
                };
                (c, m)
            })
            .collect();
        Mrc::new(Unit::Objects, Metric::Requests, points)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(keys: &str) -> Footprint {
        let mut f = Footprint::new(1.0, 0).unwrap();
        for k in keys.bytes() {
            f.access(k as u64, 1, Op::Get);
        }
        f
    }

    #[test]
    fn abcca_footprint() {
        let fp = run("abcca").footprint_curve();
        let want = [0.0, 1.0, 1.75, 7.0 / 3.0, 3.0, 3.0];
        assert_eq!(fp.len(), want.len());
        for (g, w) in fp.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{fp:?}");
        }
    }

    #[test]
    fn cyclic_lama_mrc() {
        let f = run(&"abc".repeat(50));
        let m = f.mrc(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        let want = [1.0, 1.0, 0.02, 0.02];
        for (p, w) in m.points().iter().zip(want) {
            assert!((p.1 - w).abs() < 1e-12, "{m:?}");
        }
    }
}
