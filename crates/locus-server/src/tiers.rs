//! Memory tiers in the server (sdTMM, issue 15): the worker thread, the emulated slow tier's
//! delay, and the measurement its default comes from.
//!
//! ```text
//!   locus-tiers thread: lock ─ Engine::run_tier_workers (one bounded batch each) ─ unlock
//!                       └─ sleep WORKER_BUSY_SLEEP after a step that moved items, else
//!                          WORKER_IDLE_SLEEP
//!   connection batch:   lock ─ commands (slow-tier accesses counted by the engine) ─ unlock
//!                       └─ spin slow accesses × ns   (outside the lock: see below)
//! ```
//!
//! The delay is spent after the engine lock is released: a real slow-memory access stalls the
//! core that makes it, not the other connections and tenants served on the other cores, and the
//! reply of the batch that made it waits for it. Spending it under the lock would turn one
//! tenant's slow hits into every tenant's latency.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use locus_engine::Engine;

/// The worker thread's pause after a step that moved or evicted nothing.
pub const WORKER_IDLE_SLEEP: Duration = Duration::from_millis(1);
/// Its pause after a step that did work (the next batch comes soon, but lets the lock go).
pub const WORKER_BUSY_SLEEP: Duration = Duration::from_micros(100);

/// Bytes of the buffer the start-up measurement chases pointers through: above this machine's
/// last-level cache (32 MiB here), so each load goes to memory.
const PROBE_BYTES: usize = 128 << 20;
/// Dependent loads timed by one round of the measurement.
const PROBE_LOADS: usize = 1 << 18;
/// Rounds of the measurement (the fastest counts).
const PROBE_ROUNDS: usize = 4;
/// A cache line.
const LINE: usize = 64;

/// The fast tier's access time in nanoseconds, measured once per process: the mean latency of
/// a dependent load from a random cache line of a buffer larger than the last-level cache
/// (a pointer chase over a random cycle, as memory latency benchmarks do; the fastest of
/// [`PROBE_ROUNDS`] rounds, the first of which also warms the buffer), at least 1.
///
/// The emulated slow tier's default delay is this value: a slow-tier access then costs twice a
/// fast one, the ratio the dissertation measured (section 5.2.1).
pub fn measured_fast_access_ns() -> u64 {
    static NS: OnceLock<u64> = OnceLock::new();
    *NS.get_or_init(|| {
        let lines = PROBE_BYTES / LINE;
        let stride = LINE / std::mem::size_of::<usize>();
        // A random cyclic order of the lines (Sattolo's shuffle), one link per line.
        let mut order: Vec<u32> = (0..lines as u32).collect();
        let mut rng = locus_common::rng::Rng::new(0x5d7_3a11);
        for i in (1..lines).rev() {
            let j = (rng.next_u64() % i as u64) as usize;
            order.swap(i, j);
        }
        let mut buf = vec![0usize; lines * stride];
        for w in 0..lines {
            let (from, to) = (order[w] as usize, order[(w + 1) % lines] as usize);
            buf[from * stride] = to * stride;
        }
        drop(order);
        // The best of a few rounds: a busy machine only ever adds time to a round.
        let mut at = 0usize;
        let mut best = u64::MAX;
        for _ in 0..PROBE_ROUNDS {
            let start = Instant::now();
            for _ in 0..PROBE_LOADS {
                at = buf[at];
            }
            best = best.min(start.elapsed().as_nanos() as u64 / PROBE_LOADS as u64);
        }
        std::hint::black_box(at);
        best.max(1)
    })
}

/// Spins for `ns` nanoseconds (a busy wait on the monotonic clock: the core stays busy, as it
/// does while a load waits for slow memory).
pub fn spin(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Accesses to slow-tier items so far, all tenants and commands (reads and in-place writes; 0
/// without tiers). A batch's delay is the difference across it, read under the same lock.
pub fn slow_accesses(eng: &Engine) -> u64 {
    eng.slow_accesses()
}

/// The emulated delay per slow-tier access (0: no tiers, or a real slow backend).
pub fn emulated_ns(eng: &Engine) -> u64 {
    eng.tier_stats().map_or(0, |s| s.slow_access_ns)
}

/// What the worker thread did, for INFO and the metrics.
#[derive(Debug, Default)]
pub struct WorkerCounters {
    /// Steps run by the thread.
    pub steps: AtomicU64,
    /// Nanoseconds the thread held the engine lock in its steps.
    pub lock_ns: AtomicU64,
    /// The longest single step, in nanoseconds.
    pub max_step_ns: AtomicU64,
    /// Nanoseconds of emulated slow-tier delay spent by connections.
    pub delay_ns: AtomicU64,
}

/// Runs the tier workers until the server stops: one bounded step (a batch per worker) under
/// the engine lock, then a pause without it. Returns at once without tiers.
pub fn worker_loop(shared: &crate::server::Shared) {
    if shared.engine().tier_stats().is_none() {
        return;
    }
    let counters = shared.tier_workers();
    while !shared.is_shutting_down() {
        let (work, held) = {
            let mut eng = shared.engine();
            let start = Instant::now();
            let w = eng.run_tier_workers();
            (w, start.elapsed().as_nanos() as u64)
        };
        counters.steps.fetch_add(1, Ordering::Relaxed);
        counters.lock_ns.fetch_add(held, Ordering::Relaxed);
        counters.max_step_ns.fetch_max(held, Ordering::Relaxed);
        let busy = work.demoted + work.evicted + work.promoted > 0;
        std::thread::sleep(if busy {
            WORKER_BUSY_SLEEP
        } else {
            WORKER_IDLE_SLEEP
        });
    }
}

/// Spends a batch's emulated delay: `hits` slow-tier accesses at the server's delay each, counted
/// for INFO. Call it with the engine lock released.
pub fn spend_delay(shared: &crate::server::Shared, hits: u64) {
    let ns = hits.saturating_mul(shared.tier_delay_ns());
    if ns > 0 {
        shared
            .tier_workers()
            .delay_ns
            .fetch_add(ns, Ordering::Relaxed);
        spin(ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_measured_access_time_is_plausible_and_stable() {
        let ns = measured_fast_access_ns();
        // A DRAM load is tens to hundreds of nanoseconds on any machine this runs on.
        assert!((5..5_000).contains(&ns), "{ns} ns");
        assert_eq!(measured_fast_access_ns(), ns);
    }

    #[test]
    fn spin_waits_at_least_its_time() {
        let start = Instant::now();
        spin(200_000);
        assert!(start.elapsed() >= Duration::from_micros(200));
    }
}
