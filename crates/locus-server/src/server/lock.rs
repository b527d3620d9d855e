//! The engine lock, measured: how often it is taken, how long takers wait for it, how long it is
//! held (totals, maxima and a histogram of each).
//!
//! Every tenant's commands, the tick task, the tier worker, metrics scrapes and snapshots take
//! the one engine lock today, so its hold times are what one tenant's command costs every other
//! tenant (issue #23). The figures are the admin's (`INFO locus`, the `locus_engine_lock_*`
//! metrics): a tenant never sees them, since they move with other tenants' load.
//!
//! Cost: three reads of the monotonic clock per acquisition (before waiting, once acquired, at
//! release) and a handful of relaxed atomic adds; a connection takes the lock once per batch of
//! pipelined commands, not per command.

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use locus_engine::Engine;
use parking_lot::{Mutex, MutexGuard};

use super::{LATENCY_BUCKETS, latency_bucket};

thread_local! {
    /// Engine guards alive on this thread (0 or 1: the lock is not reentrant).
    static HELD: Cell<u32> = const { Cell::new(0) };
}

/// I/O attempted while this process's thread held the engine lock (see [`assert_unlocked`]).
static IO_UNDER_LOCK: AtomicU64 = AtomicU64::new(0);

/// Whether this thread holds the engine lock.
pub fn held_here() -> bool {
    HELD.with(Cell::get) > 0
}

/// Declares that `what` (a socket write, a file write, an fsync) is about to block on I/O: no
/// engine lock may be held then, or every tenant would wait on a disk or a slow client (issue
/// 23). A violation is a bug: debug builds (every `cargo test`) panic; release builds count it
/// in `io_under_lock` (the admin's `INFO locus`, which the end-to-end tests check stays 0) and
/// go on.
#[track_caller]
pub fn assert_unlocked(what: &str) {
    if held_here() {
        IO_UNDER_LOCK.fetch_add(1, Ordering::Relaxed);
        debug_assert!(false, "{what} while holding the engine lock");
    }
}

/// How many times [`assert_unlocked`] found the engine lock held (0 unless there is a bug).
pub fn io_under_lock() -> u64 {
    IO_UNDER_LOCK.load(Ordering::Relaxed)
}

/// While alive, I/O under this thread's engine guard is not counted as a violation: for the
/// one place that does it on purpose, the save at shutdown (the server is stopping: no client
/// is served any more, and the save must finish before the process ends, as Redis's).
pub struct ShutdownIo(u32);

impl ShutdownIo {
    /// Starts the exemption.
    pub fn begin() -> Self {
        Self(HELD.with(|h| h.replace(0)))
    }
}

impl Drop for ShutdownIo {
    fn drop(&mut self) {
        HELD.with(|h| h.set(h.get() + self.0));
    }
}

/// Forgets this thread's engine guards: a forked BGSAVE child inherits the forking thread's
/// count, but holds no lock anyone else waits for (it is another process).
pub fn forget_held_in_child() {
    HELD.with(|h| h.set(0));
}

/// Counters of one lock (all relaxed: each is a statistic on its own).
#[derive(Debug, Default)]
pub struct LockStats {
    /// Times the lock was taken.
    pub acquisitions: AtomicU64,
    /// Acquisitions that found the lock held by another thread and waited.
    pub contended: AtomicU64,
    /// Nanoseconds spent waiting for the lock, over all acquisitions.
    pub wait_ns: AtomicU64,
    /// Nanoseconds the lock was held, over all acquisitions.
    pub hold_ns: AtomicU64,
    /// The longest single wait, in nanoseconds.
    pub max_wait_ns: AtomicU64,
    /// The longest single hold, in nanoseconds.
    pub max_hold_ns: AtomicU64,
    /// Holds by duration, in [`LATENCY_BUCKETS`] buckets of 1, 2, 4, ... µs (as commandstats).
    pub hold_hist: [AtomicU64; LATENCY_BUCKETS],
    /// Waits by duration, likewise.
    pub wait_hist: [AtomicU64; LATENCY_BUCKETS],
}

/// A consistent-enough copy of [`LockStats`] (each field read once).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockSnapshot {
    /// See [`LockStats::acquisitions`].
    pub acquisitions: u64,
    /// See [`LockStats::contended`].
    pub contended: u64,
    /// See [`LockStats::wait_ns`].
    pub wait_ns: u64,
    /// See [`LockStats::hold_ns`].
    pub hold_ns: u64,
    /// See [`LockStats::max_wait_ns`].
    pub max_wait_ns: u64,
    /// See [`LockStats::max_hold_ns`].
    pub max_hold_ns: u64,
    /// See [`LockStats::hold_hist`].
    pub hold_hist: Vec<u64>,
    /// See [`LockStats::wait_hist`].
    pub wait_hist: Vec<u64>,
}

impl LockStats {
    /// A copy of the counters.
    pub fn snapshot(&self) -> LockSnapshot {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LockSnapshot {
            acquisitions: load(&self.acquisitions),
            contended: load(&self.contended),
            wait_ns: load(&self.wait_ns),
            hold_ns: load(&self.hold_ns),
            max_wait_ns: load(&self.max_wait_ns),
            max_hold_ns: load(&self.max_hold_ns),
            hold_hist: self.hold_hist.iter().map(load).collect(),
            wait_hist: self.wait_hist.iter().map(load).collect(),
        }
    }

    fn record(&self, wait_ns: u64, contended: bool, hold_ns: u64) {
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
        if contended {
            self.contended.fetch_add(1, Ordering::Relaxed);
        }
        self.wait_ns.fetch_add(wait_ns, Ordering::Relaxed);
        self.hold_ns.fetch_add(hold_ns, Ordering::Relaxed);
        self.max_wait_ns.fetch_max(wait_ns, Ordering::Relaxed);
        self.max_hold_ns.fetch_max(hold_ns, Ordering::Relaxed);
        self.wait_hist[latency_bucket(wait_ns)].fetch_add(1, Ordering::Relaxed);
        self.hold_hist[latency_bucket(hold_ns)].fetch_add(1, Ordering::Relaxed);
    }
}

/// The engine behind its lock, with the lock's [`LockStats`].
#[derive(Debug)]
pub struct EngineLock {
    engine: Mutex<Engine>,
    stats: LockStats,
}

impl EngineLock {
    /// The engine, not yet locked by anyone.
    pub fn new(engine: Engine) -> Self {
        Self {
            engine: Mutex::new(engine),
            stats: LockStats::default(),
        }
    }

    /// Takes the lock (waiting for it), counting the wait; the hold is counted at release.
    pub fn lock(&self) -> EngineGuard<'_> {
        // Uncontended (the common case): no wait to time, one clock read for the hold.
        if let Some(g) = self.engine.try_lock() {
            return self.guard_at(g, Instant::now(), 0, false);
        }
        let asked = Instant::now();
        let guard = self.engine.lock();
        self.guard(guard, asked, true)
    }

    /// Takes the lock if it comes within `wait` (counted as [`EngineLock::lock`] counts); `None`
    /// when it did not (nothing is counted then).
    pub fn try_lock_for(&self, wait: Duration) -> Option<EngineGuard<'_>> {
        let asked = Instant::now();
        match self.engine.try_lock() {
            Some(g) => Some(self.guard(g, asked, false)),
            None => self
                .engine
                .try_lock_for(wait)
                .map(|g| self.guard(g, asked, true)),
        }
    }

    /// Takes the lock, waiting in slices of `slice`, unless `give_up` says to stop between two
    /// slices (`None` then, nothing counted); the wait counted runs from the first try.
    pub fn lock_unless(
        &self,
        slice: Duration,
        give_up: impl Fn() -> bool,
    ) -> Option<EngineGuard<'_>> {
        let asked = Instant::now();
        if let Some(g) = self.engine.try_lock() {
            return Some(self.guard(g, asked, false));
        }
        loop {
            if let Some(g) = self.engine.try_lock_for(slice) {
                return Some(self.guard(g, asked, true));
            }
            if give_up() {
                return None;
            }
        }
    }

    fn guard<'a>(
        &'a self,
        guard: MutexGuard<'a, Engine>,
        asked: Instant,
        contended: bool,
    ) -> EngineGuard<'a> {
        let since = Instant::now();
        let wait_ns = since.duration_since(asked).as_nanos() as u64;
        self.guard_at(guard, since, wait_ns, contended)
    }

    fn guard_at<'a>(
        &'a self,
        guard: MutexGuard<'a, Engine>,
        since: Instant,
        wait_ns: u64,
        contended: bool,
    ) -> EngineGuard<'a> {
        HELD.with(|h| h.set(h.get() + 1));
        EngineGuard {
            guard,
            stats: &self.stats,
            wait_ns,
            contended,
            since,
        }
    }

    /// Whether another thread holds the lock right now (a hint).
    pub fn is_locked(&self) -> bool {
        self.engine.is_locked()
    }

    /// The lock's counters.
    pub fn stats(&self) -> &LockStats {
        &self.stats
    }
}

/// The locked engine; dereferences to [`Engine`]. Dropping it releases the lock and counts the
/// hold.
pub struct EngineGuard<'a> {
    guard: MutexGuard<'a, Engine>,
    stats: &'a LockStats,
    wait_ns: u64,
    contended: bool,
    since: Instant,
}

impl EngineGuard<'_> {
    /// Lets a thread waiting for the lock have it, and takes it back after: returns at once
    /// when nobody waits. When the lock did change hands (it took a microsecond or more to get
    /// it back: a no-op takes tens of nanoseconds), the hold so far is counted as one
    /// acquisition and the wait to get it back as the next one's (contended) wait.
    pub fn bump(this: &mut Self) {
        let now = Instant::now();
        MutexGuard::bump(&mut this.guard);
        let back = Instant::now();
        let waited = back.duration_since(now).as_nanos() as u64;
        if waited >= 1_000 {
            let held = now.duration_since(this.since).as_nanos() as u64;
            this.stats.record(this.wait_ns, this.contended, held);
            this.wait_ns = waited;
            this.contended = true;
            this.since = back;
        }
    }
}

impl Deref for EngineGuard<'_> {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.guard
    }
}

impl DerefMut for EngineGuard<'_> {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.guard
    }
}

impl Drop for EngineGuard<'_> {
    fn drop(&mut self) {
        HELD.with(|h| h.set(h.get().saturating_sub(1)));
        let hold = self.since.elapsed().as_nanos() as u64;
        self.stats.record(self.wait_ns, self.contended, hold);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use locus_common::VirtualClock;
    use locus_engine::EngineConfig;

    use super::*;

    fn lock() -> EngineLock {
        let e = Engine::new(EngineConfig::default(), Arc::new(VirtualClock::new(0))).unwrap();
        EngineLock::new(e)
    }

    #[test]
    fn holds_and_waits_are_counted() {
        let l = lock();
        {
            let _g = l.lock();
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        let s = l.stats().snapshot();
        assert_eq!(s.acquisitions, 1);
        assert_eq!(s.contended, 0);
        assert!(
            s.hold_ns >= 3_000_000 && s.max_hold_ns == s.hold_ns,
            "{s:?}"
        );
        assert_eq!(s.hold_hist.iter().sum::<u64>(), 1);
        // In the bucket of its duration (3 ms or more: 4,096 µs or above).
        assert_eq!(s.hold_hist[latency_bucket(s.hold_ns)], 1);
        assert!(latency_bucket(s.hold_ns) >= 12);
    }

    #[test]
    fn a_waiter_behind_a_holder_waits_as_long_as_the_hold() {
        let l = Arc::new(lock());
        let g = l.lock();
        let started = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (l2, s2) = (l.clone(), started.clone());
        let waiter = std::thread::spawn(move || {
            s2.store(true, Ordering::SeqCst);
            drop(l2.lock());
        });
        while !started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // Held for 20 ms after the waiter started: unless the waiter was descheduled for all of
        // that before asking, it waited, and its wait is counted as contended.
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(g);
        waiter.join().unwrap();
        let s = l.stats().snapshot();
        assert_eq!(s.acquisitions, 2);
        assert!(s.hold_ns >= 20_000_000, "{s:?}");
        assert!(s.contended <= 1);
        if s.contended == 1 {
            assert!(
                s.max_wait_ns > 0 && s.wait_hist.iter().sum::<u64>() == 2,
                "{s:?}"
            );
        }
    }

    #[test]
    fn bump_hands_the_lock_to_a_waiter_and_takes_it_back() {
        let l = Arc::new(lock());
        let mut g = l.lock();
        // Without a waiter, a bump is a no-op: nothing is counted.
        EngineGuard::bump(&mut g);
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (l2, r2) = (l.clone(), ran.clone());
        let waiter = std::thread::spawn(move || {
            let _g = l2.lock();
            r2.store(true, Ordering::SeqCst);
        });
        // Until the waiter has asked and parked (it spins a few microseconds first), a bump is
        // a no-op; once it waits, a bump lets it run and returns when the lock is back. A bump
        // that never hands the lock over fails here.
        let end = Instant::now() + std::time::Duration::from_secs(10);
        loop {
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert!(!ran.load(Ordering::SeqCst), "the lock is held");
            EngineGuard::bump(&mut g);
            if ran.load(Ordering::SeqCst) {
                break;
            }
            assert!(Instant::now() < end, "no bump handed the lock over");
        }
        assert!(held_here());
        drop(g);
        waiter.join().unwrap();
        assert!(!held_here());
        let s = l.stats().snapshot();
        // Our hold up to the bump, the waiter's, our hold after it.
        assert_eq!(s.acquisitions, 3, "{s:?}");
    }
}
