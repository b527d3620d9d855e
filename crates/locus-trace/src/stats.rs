//! Trace statistics (`locus trace stats`), with exact LRU miss ratios.
//!
//! Definitions follow `shared/traces/README.md`:
//!
//! * a *request* is one record (one block for ARC `.lis`); every request is an access, whatever
//!   its op (the op mix is reported separately);
//! * *unique keys* are distinct [`Request::key`]s; *one-hit wonders* are keys requested once;
//! * sizes are [`Request::size`]; the *footprint* is the sum over keys of each key's last size;
//! * *LRU miss @x % of keys*: exact LRU request miss ratio with `max(1, ⌊x·keys⌋)` objects;
//!   *@x % of bytes*: with `max(1, ⌊x·footprint⌋)` bytes, where a request misses when its byte
//!   stack distance (its own size plus the current sizes of the distinct keys touched since its
//!   previous access) exceeds the capacity. Byte ratios are computed only when sizes vary.
//!
//! Stack distances come from a Fenwick tree over access slots (`docs/models.md` §1): each key keeps
//! one live slot, the tree sums the weights of live slots, and the distance of a reuse is the
//! weight of the slots after the key's previous one. O(log N) per request, O(keys) memory.
//! The capacities depend on the final key count and footprint, so object distances go into an
//! exact histogram, and the byte ratios need a second pass over the trace (hence [`compute`]
//! takes a way to open the trace, not a reader).

use hashbrown::HashMap;
use serde::Serialize;

use crate::{
    error::{Result, TraceError},
    read::{BuildMix, ReadWarning, RequestReader},
    record::{Op, Request},
};

/// A Fenwick (binary indexed) tree of `u64` weights over slots `1..=len`.
#[derive(Debug, Clone)]
struct Fenwick {
    t: Vec<u64>,
}

impl Fenwick {
    fn new(len: usize) -> Self {
        Self {
            t: vec![0; len + 1],
        }
    }

    fn len(&self) -> usize {
        self.t.len() - 1
    }

    #[inline]
    fn add(&mut self, mut i: usize, w: u64) {
        while i < self.t.len() {
            self.t[i] = self.t[i].wrapping_add(w);
            i += i & i.wrapping_neg();
        }
    }

    #[inline]
    fn sub(&mut self, i: usize, w: u64) {
        self.add(i, w.wrapping_neg());
    }

    /// Sum of slots `1..=i`.
    #[inline]
    fn prefix(&self, mut i: usize) -> u64 {
        let mut s = 0u64;
        while i > 0 {
            s = s.wrapping_add(self.t[i]);
            i &= i - 1;
        }
        s
    }

    /// Builds the tree from per-slot weights `w[1..]` in O(len).
    fn from_weights(mut w: Vec<u64>) -> Self {
        let n = w.len();
        for i in 1..n {
            let j = i + (i & i.wrapping_neg());
            if j < n {
                w[j] = w[j].wrapping_add(w[i]);
            }
        }
        Self { t: w }
    }
}

/// Exact LRU stack distances (objects or bytes) over a key stream.
///
/// `access(key, weight)` returns the stack distance of this access: `None` for a first access,
/// else the weight of the distinct keys touched since the previous access plus `weight`.
/// With weight 1 this is the object stack distance; with weight = size the byte stack distance.
///
/// Layout: one hash lookup per access maps the key to a dense id (first-seen order); the id's
/// slot and weight live in plain vectors, and each slot records its id, so compaction walks
/// arrays instead of the hash table.
#[derive(Debug)]
pub struct LruStack {
    ids: HashMap<u64, u32, BuildMix>,
    /// Per id: the slot of its latest access.
    slot: Vec<u32>,
    /// Per id: the weight it contributed at that slot.
    weight: Vec<u64>,
    /// Per slot: the id accessed there (live only where `slot[id] == s`).
    slot_id: Vec<u32>,
    tree: Fenwick,
    next: usize,
    total: u64,
}

impl Default for LruStack {
    fn default() -> Self {
        Self::new()
    }
}

impl LruStack {
    /// An empty stack.
    pub fn new() -> Self {
        Self {
            ids: HashMap::with_hasher(BuildMix),
            slot: Vec::new(),
            weight: Vec::new(),
            slot_id: vec![0; 1025],
            tree: Fenwick::new(1024),
            next: 1,
            total: 0,
        }
    }

    /// Distinct keys seen.
    pub fn keys(&self) -> usize {
        self.slot.len()
    }

    /// Records an access; returns its stack distance (`None` when cold).
    #[inline]
    pub fn access(&mut self, key: u64, weight: u64) -> Option<u64> {
        self.access_id(key, weight).1
    }

    /// As [`LruStack::access`], also returning the key's dense id (0, 1, … in first-seen order).
    ///
    /// # Panics
    /// Beyond 2^31 distinct keys (the slot numbers are 32-bit).
    #[inline]
    pub fn access_id(&mut self, key: u64, weight: u64) -> (u32, Option<u64>) {
        if self.next > self.tree.len() {
            self.compact();
        }
        let t = self.next;
        self.next += 1;
        let fresh = self.slot.len() as u32;
        let id = *self.ids.entry(key).or_insert(fresh);
        let i = id as usize;
        let d = if id == fresh {
            self.slot.push(t as u32);
            self.weight.push(weight);
            None
        } else {
            let (s0, w0) = (self.slot[i] as usize, self.weight[i]);
            // Everything after s0 was touched since: the live weight beyond slot s0.
            let between = self.total - self.tree.prefix(s0);
            self.tree.sub(s0, w0);
            self.total -= w0;
            self.slot[i] = t as u32;
            self.weight[i] = weight;
            Some(between + weight)
        };
        self.tree.add(t, weight);
        self.total += weight;
        self.slot_id[t] = id;
        (id, d)
    }

    /// Renumbers the live slots `1..=M` in access order and rebuilds the tree with room for
    /// `max(2M, 1024)` slots.
    fn compact(&mut self) {
        let m = self.slot.len();
        let cap = (2 * m).max(1024);
        assert!(
            cap < u32::MAX as usize,
            "LruStack: more than 2^31 distinct keys"
        );
        let mut ids = vec![0u32; cap + 1];
        let mut weights = vec![0u64; cap + 1];
        let mut n = 0;
        for s in 1..self.next {
            let id = self.slot_id[s] as usize;
            if self.slot[id] as usize == s {
                n += 1;
                self.slot[id] = n as u32;
                ids[n] = id as u32;
                weights[n] = self.weight[id];
            }
        }
        debug_assert_eq!(n, m);
        self.slot_id = ids;
        self.tree = Fenwick::from_weights(weights);
        self.next = n + 1;
    }
}

/// Request counts per op.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct OpMix {
    /// GETs.
    pub get: u64,
    /// SETs.
    pub set: u64,
    /// DELETEs.
    pub delete: u64,
}

/// One point of an LRU miss-ratio curve.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MissPoint {
    /// Fraction of the unique keys (or of the footprint): 0.001, 0.01 or 0.1.
    pub fraction: f64,
    /// Capacity in objects or bytes.
    pub capacity: u64,
    /// Exact LRU request miss ratio.
    pub miss_ratio: f64,
}

/// How many requests have a size in `[lower, 2·lower)` (`lower` = 0 for size 0).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SizeBucket {
    /// Smallest size in the bucket.
    pub lower: u64,
    /// Requests.
    pub requests: u64,
}

/// Statistics of a trace.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TraceStats {
    /// Where the requests came from.
    pub source: String,
    /// The format name.
    pub format: Option<String>,
    /// Records (lines or binary structs) read.
    pub records: u64,
    /// Requests (accesses).
    pub requests: u64,
    /// Distinct keys.
    pub unique_keys: u64,
    /// Share of keys requested exactly once.
    pub one_hit_wonder_ratio: f64,
    /// Share of requests that go to the most requested 1 % of keys (at least one key).
    pub top1pct_key_request_share: f64,
    /// Unique keys / requests (the miss ratio of an infinite cache).
    pub compulsory_miss_ratio: f64,
    /// Requests per op.
    pub ops: OpMix,
    /// Distinct tenants.
    pub tenants: u64,
    /// The trace carries sizes.
    pub has_sizes: bool,
    /// Smallest request size (bytes).
    pub size_min: Option<u64>,
    /// Largest request size.
    pub size_max: Option<u64>,
    /// Mean request size.
    pub size_mean: Option<f64>,
    /// Sizes by power-of-two buckets.
    pub size_histogram: Vec<SizeBucket>,
    /// Sum of each key's last size.
    pub footprint_bytes: Option<u64>,
    /// Keys seen with more than one size.
    pub keys_with_changing_size: Option<u64>,
    /// Exact LRU miss ratios at 0.1 %, 1 %, 10 % of the unique keys (every object counts 1).
    pub lru_miss_ratio_objects: Vec<MissPoint>,
    /// Exact LRU miss ratios at 0.1 %, 1 %, 10 % of the footprint; absent when sizes are
    /// absent or constant, or when the trace could not be read a second time.
    pub lru_miss_ratio_bytes: Option<Vec<MissPoint>>,
    /// Records the reader repaired.
    pub warnings: Vec<ReadWarning>,
}

/// The fractions `stats` evaluates, as divisors of the key count or footprint.
const FRACTIONS: [(f64, u64); 3] = [(0.001, 1000), (0.01, 100), (0.1, 10)];

/// Per-key state of the first pass.
#[derive(Clone, Copy)]
struct KeyInfo {
    count: u64,
    size: u64,
    changed: bool,
}

/// Computes the statistics of a trace. `open` is called once, and a second time when sizes vary
/// (for the byte miss ratios); if the second call fails the byte ratios are left out.
///
/// # Errors
/// Any read error; a second pass that yields a different number of requests.
pub fn compute(open: &mut dyn FnMut() -> Result<Box<dyn RequestReader>>) -> Result<TraceStats> {
    let mut reader = open()?;
    let info = reader.info().clone();
    let mut keys: Vec<KeyInfo> = Vec::new();
    let mut tenants: HashMap<u64, (), BuildMix> = HashMap::with_hasher(BuildMix);
    let mut stack = LruStack::new();
    let mut hist: Vec<u64> = Vec::new();
    let mut ops = OpMix::default();
    let (mut smin, mut smax, mut ssum) = (u64::MAX, 0u64, 0u128);
    let mut size_hist = [0u64; 65];
    let mut n = 0u64;
    let mut last_tenant = None;
    let mut req = Request::default();
    while reader.read_into(&mut req)? {
        n += 1;
        match req.op {
            Op::Get => ops.get += 1,
            Op::Set => ops.set += 1,
            Op::Delete => ops.delete += 1,
        }
        if last_tenant != Some(req.tenant) {
            last_tenant = Some(req.tenant);
            tenants.insert(req.tenant as u64, ());
        }
        let size = req.size();
        smin = smin.min(size);
        smax = smax.max(size);
        ssum += size as u128;
        size_hist[(64 - size.leading_zeros()) as usize] += 1;
        let (id, d) = stack.access_id(req.key, 1);
        match keys.get_mut(id as usize) {
            Some(k) => {
                k.count += 1;
                if k.size != size {
                    k.changed = true;
                    k.size = size;
                }
            }
            None => keys.push(KeyInfo {
                count: 1,
                size,
                changed: false,
            }),
        }
        if let Some(d) = d {
            let d = d as usize;
            if d >= hist.len() {
                hist.resize((d + 1).max(hist.len() * 2), 0);
            }
            hist[d] += 1;
        }
    }
    let warnings = reader.warnings().to_vec();
    let records = reader.records_read();
    drop(reader);

    let m = keys.len() as u64;
    let frac = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let mut counts: Vec<u64> = keys.iter().map(|k| k.count).collect();
    let one_hit = counts.iter().filter(|&&c| c == 1).count() as u64;
    let top_k = ((m / 100).max(1) as usize).min(counts.len());
    let top = if top_k == 0 {
        0
    } else {
        counts.select_nth_unstable_by(top_k - 1, |a, b| b.cmp(a));
        counts[..top_k].iter().sum()
    };
    let footprint: u64 = keys.iter().map(|k| k.size).sum();
    let changing = keys.iter().filter(|k| k.changed).count() as u64;

    // Object miss ratios: misses = cold + requests with distance > capacity.
    let mut suffix = vec![0u64; hist.len() + 1];
    for d in (0..hist.len()).rev() {
        suffix[d] = suffix[d + 1] + hist[d];
    }
    let objects = FRACTIONS
        .iter()
        .map(|&(f, div)| {
            let cap = (m / div).max(1);
            let far = suffix.get(cap as usize + 1).copied().unwrap_or(0);
            MissPoint {
                fraction: f,
                capacity: cap,
                miss_ratio: frac(m + far, n),
            }
        })
        .collect();

    let varying = info.has_sizes && n > 0 && smin != smax;
    let bytes = if varying {
        let caps: Vec<u64> = FRACTIONS
            .iter()
            .map(|&(_, d)| (footprint / d).max(1))
            .collect();
        match open() {
            Ok(mut again) => {
                let misses = byte_misses(&mut *again, &caps, n)?;
                Some(
                    FRACTIONS
                        .iter()
                        .zip(caps.iter().zip(misses))
                        .map(|(&(f, _), (&cap, miss))| MissPoint {
                            fraction: f,
                            capacity: cap,
                            miss_ratio: frac(miss, n),
                        })
                        .collect(),
                )
            }
            Err(_) => None,
        }
    } else {
        None
    };

    let sized = info.has_sizes && n > 0;
    Ok(TraceStats {
        source: info.source.clone(),
        format: info.format.map(|f| f.name().to_string()),
        records,
        requests: n,
        unique_keys: m,
        one_hit_wonder_ratio: frac(one_hit, m),
        top1pct_key_request_share: frac(top, n),
        compulsory_miss_ratio: frac(m, n),
        ops,
        tenants: tenants.len() as u64,
        has_sizes: info.has_sizes,
        size_min: sized.then_some(smin),
        size_max: sized.then_some(smax),
        size_mean: sized.then(|| ssum as f64 / n as f64),
        size_histogram: size_hist
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(b, &c)| SizeBucket {
                lower: if b == 0 { 0 } else { 1u64 << (b - 1) },
                requests: c,
            })
            .collect(),
        footprint_bytes: info.has_sizes.then_some(footprint),
        keys_with_changing_size: info.has_sizes.then_some(changing),
        lru_miss_ratio_objects: objects,
        lru_miss_ratio_bytes: bytes,
        warnings,
    })
}

/// Second pass: byte-LRU misses at each capacity.
fn byte_misses(r: &mut dyn RequestReader, caps: &[u64], expect: u64) -> Result<Vec<u64>> {
    let mut stack = LruStack::new();
    let mut misses = vec![0u64; caps.len()];
    let mut req = Request::default();
    let mut n = 0u64;
    while r.read_into(&mut req)? {
        n += 1;
        match stack.access(req.key, req.size()) {
            None => misses.iter_mut().for_each(|m| *m += 1),
            Some(d) => {
                for (m, &c) in misses.iter_mut().zip(caps) {
                    *m += u64::from(d > c);
                }
            }
        }
    }
    if n != expect {
        return Err(TraceError::Format {
            path: r.info().source.clone().into(),
            msg: format!("second pass read {n} requests, the first {expect}: input changed"),
        });
    }
    Ok(misses)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute-force LRU stack distance: position in a recency list.
    fn brute(trace: &[(u64, u64)]) -> Vec<Option<u64>> {
        let mut stack: Vec<(u64, u64)> = Vec::new();
        trace
            .iter()
            .map(|&(k, w)| {
                let d = stack.iter().position(|e| e.0 == k).map(|p| {
                    let above: u64 = stack[..p].iter().map(|e| e.1).sum();
                    stack.remove(p);
                    above + w
                });
                stack.insert(0, (k, w));
                d
            })
            .collect()
    }

    #[test]
    fn worked_example_from_models_md() {
        // a b c b a d a with sizes a=10 b=20 c=30 d=40.
        let sizes = |k| match k {
            1 => 10,
            2 => 20,
            3 => 30,
            _ => 40,
        };
        let keys = [1u64, 2, 3, 2, 1, 4, 1];
        let mut s = LruStack::new();
        let d: Vec<_> = keys.iter().map(|&k| s.access(k, 1)).collect();
        assert_eq!(d, vec![None, None, None, Some(2), Some(3), None, Some(2)]);
        let mut s = LruStack::new();
        let d: Vec<_> = keys.iter().map(|&k| s.access(k, sizes(k))).collect();
        assert_eq!(
            d,
            vec![None, None, None, Some(50), Some(60), None, Some(50)]
        );
    }

    #[test]
    fn matches_brute_force_across_compactions() {
        let mut rng = locus_common::Rng::new(3);
        for round in 0..20 {
            let keys = 1 + rng.below(300);
            let trace: Vec<(u64, u64)> = (0..5000)
                .map(|_| {
                    let k = rng.below(keys);
                    let w = if round % 2 == 0 {
                        1
                    } else {
                        1 + rng.below(100)
                    };
                    (k, w)
                })
                .collect();
            let mut s = LruStack::new();
            let got: Vec<_> = trace.iter().map(|&(k, w)| s.access(k, w)).collect();
            assert_eq!(got, brute(&trace), "round {round}");
        }
    }

    #[test]
    fn compute_counts_ops_tenants_and_needs_two_passes_for_bytes() {
        use crate::generate::{Generator, GeneratorConfig};
        let mut opened = 0;
        let s = compute(&mut || {
            opened += 1;
            let g = Generator::new(GeneratorConfig {
                requests: 3000,
                seed: 4,
                tenants: vec![
                    "tenant=0,keys=100,get=0.9,set=0.1,value-size=uniform:10:90"
                        .parse()
                        .unwrap(),
                    "tenant=7,pattern=loop,keys=50".parse().unwrap(),
                ],
            })?;
            Ok(Box::new(g) as Box<dyn RequestReader>)
        })
        .unwrap();
        assert_eq!(opened, 2, "varying sizes need the byte pass");
        assert_eq!((s.requests, s.tenants), (3000, 2));
        assert_eq!(s.ops.get + s.ops.set + s.ops.delete, 3000);
        assert!(s.ops.set > 0 && s.ops.delete == 0);
        assert!(s.unique_keys <= 150);
        let b = s.lru_miss_ratio_bytes.expect("byte ratios");
        assert!(b.iter().all(|p| (0.0..=1.0).contains(&p.miss_ratio)));
        assert!(
            s.lru_miss_ratio_objects
                .windows(2)
                .all(|w| w[0].miss_ratio >= w[1].miss_ratio)
        );
    }
}
