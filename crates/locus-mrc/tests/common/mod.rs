//! Synthetic traces and reference simulators for the locus-mrc test suites (written for the tests,
//! independent of the models under test).

#![allow(dead_code, reason = "each test binary uses a different subset")]

use locus_common::{Rng, Zipf};
use locus_mrc::{Metric, Mrc, Op, Profiler, Unit};
use std::collections::{BTreeMap, HashMap};

/// One access.
#[derive(Debug, Clone, Copy)]
pub struct Acc {
    pub key: u64,
    pub size: u32,
    pub op: Op,
}

/// Zipf(alpha) over `n` keys, `len` GETs, sizes from `size_of(key)`.
pub fn zipf(alpha: f64, n: u64, len: usize, seed: u64, size_of: impl Fn(u64) -> u32) -> Vec<Acc> {
    let z = Zipf::new(n, alpha);
    let mut rng = Rng::new(seed);
    // Scatter ranks over ids so hot keys are not the small integers.
    (0..len)
        .map(|_| {
            let r = z.sample(&mut rng) - 1;
            let key = r.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8;
            Acc {
                key,
                size: size_of(key),
                op: Op::Get,
            }
        })
        .collect()
}

/// A cyclic scan over `n` keys.
pub fn looping(n: u64, len: usize) -> Vec<Acc> {
    (0..len as u64)
        .map(|t| Acc {
            key: t % n,
            size: 1,
            op: Op::Get,
        })
        .collect()
}

/// Zipf whose key space shifts every `phase` requests (phase changes).
pub fn phased(alpha: f64, n: u64, len: usize, phase: usize, seed: u64) -> Vec<Acc> {
    let mut v = zipf(alpha, n, len, seed, |_| 1);
    for (i, a) in v.iter_mut().enumerate() {
        a.key = a.key.wrapping_add((i / phase) as u64 * 1_000_003);
    }
    v
}

/// 50/50 mix of a loop over `loop_n` keys and Zipf(alpha) over `zipf_n` other keys.
pub fn loop_zipf(loop_n: u64, alpha: f64, zipf_n: u64, len: usize, seed: u64) -> Vec<Acc> {
    let z = zipf(alpha, zipf_n, len, seed, |_| 1);
    let mut rng = Rng::new(seed ^ 99);
    let mut t = 0u64;
    z.into_iter()
        .map(|mut a| {
            if rng.below(2) == 0 {
                a.key = (1u64 << 60) + t % loop_n;
                t += 1;
            }
            a
        })
        .collect()
}

pub fn feed(p: &mut dyn Profiler, trace: &[Acc]) {
    for a in trace {
        p.access(a.key, a.size, a.op);
    }
}

/// Brute-force LRU stack distances (object mode): a Vec with the top at index 0; a DEL leaves a
/// hole (`None`) that the next access of a key below it takes over, and a newcomer pushes the
/// topmost hole out.
pub fn brute_distances(trace: &[Acc]) -> Vec<Option<u64>> {
    let mut stack: Vec<Option<u64>> = Vec::new();
    let mut out = Vec::new();
    for a in trace {
        let p = stack.iter().position(|&k| k == Some(a.key));
        match a.op {
            Op::Del => {
                if let Some(p) = p {
                    stack[p] = None;
                }
            }
            Op::Get | Op::Set => {
                let hole = stack.iter().position(|k| k.is_none());
                match (p, hole) {
                    (Some(p), Some(h)) if h < p => {
                        stack.remove(p);
                        stack.insert(p, None);
                        stack.remove(h);
                    }
                    (Some(p), _) => {
                        stack.remove(p);
                    }
                    (None, Some(h)) => {
                        stack.remove(h);
                    }
                    (None, None) => {}
                }
                stack.insert(0, Some(a.key));
                if a.op == Op::Get {
                    out.push(p.map(|p| p as u64 + 1));
                }
            }
        }
    }
    out
}

/// Miss ratio of GETs with the given distances at capacity c.
pub fn mr_from_distances(d: &[Option<u64>], c: u64) -> f64 {
    let miss = d.iter().filter(|x| x.is_none_or(|v| v > c)).count();
    miss as f64 / d.len() as f64
}

/// A byte-capacity LRU cache that evicts from the tail until the newcomer fits. Returns the GET
/// request miss ratio. Objects larger than the cache are never admitted.
pub fn byte_lru_sim(trace: &[Acc], cap: u64) -> f64 {
    let mut order: BTreeMap<u64, u64> = BTreeMap::new(); // time -> key
    let mut items: HashMap<u64, (u64, u64)> = HashMap::new(); // key -> (time, size)
    let mut used = 0u64;
    let (mut gets, mut misses) = (0u64, 0u64);
    for (t, a) in trace.iter().enumerate() {
        let t = t as u64;
        let size = a.size.max(1) as u64;
        let present = items.remove(&a.key);
        if let Some((t0, s0)) = present {
            order.remove(&t0);
            used -= s0;
        }
        if a.op == Op::Get {
            gets += 1;
            if present.is_none() {
                misses += 1;
            }
        }
        if a.op == Op::Del || size > cap {
            continue;
        }
        while used + size > cap {
            let Some((&ot, &ok)) = order.iter().next() else {
                break;
            };
            order.remove(&ot);
            used -= items.remove(&ok).map_or(0, |x| x.1);
        }
        order.insert(t, a.key);
        items.insert(a.key, (t, size));
        used += size;
    }
    misses as f64 / gets as f64
}

/// Textbook K-LRU with `cap` objects: on a miss in a full cache, sample K residents uniformly with
/// replacement and evict the least recently used of them. Returns the GET miss ratio.
pub fn klru_sim(trace: &[Acc], cap: usize, k: u32, seed: u64) -> f64 {
    let mut rng = Rng::new(seed);
    let mut keys: Vec<u64> = Vec::new();
    let mut idx: HashMap<u64, (usize, u64)> = HashMap::new(); // key -> (index in keys, last access)
    let (mut gets, mut misses) = (0u64, 0u64);
    for (t, a) in trace.iter().enumerate() {
        let t = t as u64;
        if a.op == Op::Get {
            gets += 1;
        }
        if let Some(e) = idx.get_mut(&a.key) {
            e.1 = t;
            continue;
        }
        if a.op == Op::Get {
            misses += 1;
        }
        if keys.len() >= cap {
            let mut victim = None::<(u64, usize)>;
            for _ in 0..k {
                let i = rng.below(keys.len() as u64) as usize;
                let last = idx[&keys[i]].1;
                if victim.is_none_or(|(l, _)| last < l) {
                    victim = Some((last, i));
                }
            }
            let (_, i) = victim.unwrap();
            let old = keys.swap_remove(i);
            idx.remove(&old);
            if i < keys.len() {
                idx.get_mut(&keys[i]).unwrap().0 = i;
            }
        }
        idx.insert(a.key, (keys.len(), t));
        keys.push(a.key);
    }
    misses as f64 / gets as f64
}

/// Exact LRU curve of a trace at `caps` (object or byte capacities).
pub fn exact_curve(trace: &[Acc], unit: Unit, caps: &[f64]) -> Mrc {
    let mut p = locus_mrc::ExactLru::new(unit, Metric::Requests);
    feed(&mut p, trace);
    p.mrc(caps).unwrap()
}

/// Capacities from 1% to 80% of `ws`, as docs/models.md's measurements use.
pub fn test_caps(ws: f64) -> Vec<f64> {
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8]
        .iter()
        .map(|f| (ws * f).round().max(1.0))
        .collect()
}

pub fn distinct(trace: &[Acc]) -> usize {
    trace
        .iter()
        .map(|a| a.key)
        .collect::<std::collections::HashSet<_>>()
        .len()
}

/// Textbook K-LRU with a byte capacity: while the newcomer does not fit, sample K residents
/// uniformly with replacement and evict the least recently used of them. GET miss ratio.
pub fn klru_bytes_sim(trace: &[Acc], cap: u64, k: u32, seed: u64) -> f64 {
    let mut rng = Rng::new(seed);
    let mut keys: Vec<u64> = Vec::new();
    let mut idx: HashMap<u64, (usize, u64, u64)> = HashMap::new(); // key -> (index, last, size)
    let mut used = 0u64;
    let (mut gets, mut misses) = (0u64, 0u64);
    for (t, a) in trace.iter().enumerate() {
        let t = t as u64;
        let size = a.size.max(1) as u64;
        if a.op == Op::Get {
            gets += 1;
        }
        if let Some(e) = idx.get_mut(&a.key) {
            e.1 = t;
            continue;
        }
        if a.op == Op::Get {
            misses += 1;
        }
        if size > cap {
            continue;
        }
        while used + size > cap && !keys.is_empty() {
            let mut victim = None::<(u64, usize)>;
            for _ in 0..k {
                let i = rng.below(keys.len() as u64) as usize;
                let last = idx[&keys[i]].1;
                if victim.is_none_or(|(l, _)| last < l) {
                    victim = Some((last, i));
                }
            }
            let (_, i) = victim.unwrap();
            let old = keys.swap_remove(i);
            used -= idx.remove(&old).unwrap().2;
            if i < keys.len() {
                idx.get_mut(&keys[i]).unwrap().0 = i;
            }
        }
        idx.insert(a.key, (keys.len(), t, size));
        keys.push(a.key);
        used += size;
    }
    misses as f64 / gets as f64
}
