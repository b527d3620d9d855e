//! Time sources.
//!
//! The engine never calls the system clock itself: it is handed a [`Clock`]. Times are
//! milliseconds since the Unix epoch for [`SystemClock`], and milliseconds since an arbitrary
//! origin for [`VirtualClock`] (a simulation starts wherever its trace starts).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in milliseconds.
///
/// Implementations MUST be monotone non-decreasing for the engine's purposes: a clock that goes
/// backwards makes TTLs and idle times wrong (not unsafe).
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time in milliseconds.
    fn now_ms(&self) -> u64;

    /// The current time in microseconds (defaults to `now_ms() * 1000`).
    fn now_us(&self) -> u64 {
        self.now_ms().saturating_mul(1000)
    }
}

/// A clock shared between the engine and whoever drives it.
pub type SharedClock = Arc<dyn Clock>;

/// The wall clock (milliseconds since the Unix epoch).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    fn now_us(&self) -> u64 {
        match PINNED_US.with(Cell::get) {
            0 => wall_us(),
            pinned => pinned,
        }
    }
}

thread_local! {
    /// The time [`SystemClock`] reports on this thread while a [`PinnedTime`] lives (0: none).
    static PINNED_US: Cell<u64> = const { Cell::new(0) };
}

/// The wall clock in microseconds since the Unix epoch (0 before it).
fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() * 1_000_000 + u64::from(d.subsec_micros()))
        .unwrap_or(0)
}

/// Holds [`SystemClock`] still on the current thread: until it is dropped, every read of a
/// `SystemClock` on this thread returns the time it was pinned at. A server pins the clock for
/// one batch of requests read from a socket and run under one engine lock hold, so that the
/// engine's several reads per request (its LRU stamp, the slab controller's access time, a TTL
/// check) cost a thread-local load instead of a clock read each; the batch is bounded, and the
/// engine's view of time stays non-decreasing because nobody else uses the engine meanwhile.
/// memcached itself reads its clock once a second. Pins nest (the inner one wins until dropped);
/// other threads are not affected.
#[derive(Debug)]
#[must_use = "the clock is pinned only while the guard lives"]
pub struct PinnedTime {
    prev: u64,
}

impl PinnedTime {
    /// Pins this thread's [`SystemClock`] to the wall clock's current time.
    pub fn now() -> Self {
        Self::at_us(wall_us().max(1))
    }

    /// Pins this thread's [`SystemClock`] to `us` microseconds since the Unix epoch (0 unpins).
    pub fn at_us(us: u64) -> Self {
        Self {
            prev: PINNED_US.with(|p| p.replace(us)),
        }
    }
}

impl Drop for PinnedTime {
    fn drop(&mut self) {
        PINNED_US.with(|p| p.set(self.prev));
    }
}

/// A clock that only moves when told to: simulations and deterministic tests.
///
/// Cloning shares the same time (an `Arc` inside), so the driver keeps one handle and gives the
/// engine another.
#[derive(Debug, Default, Clone)]
pub struct VirtualClock {
    now_us: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A virtual clock starting at `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        Self {
            now_us: Arc::new(AtomicU64::new(start_ms.saturating_mul(1000))),
        }
    }

    /// Sets the time; a value earlier than the current one is ignored (the clock never goes back).
    pub fn set_ms(&self, ms: u64) {
        self.set_us(ms.saturating_mul(1000));
    }

    /// Sets the time in microseconds; earlier values are ignored.
    pub fn set_us(&self, us: u64) {
        self.now_us.fetch_max(us, Ordering::Relaxed);
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: u64) {
        self.now_us
            .fetch_add(ms.saturating_mul(1000), Ordering::Relaxed);
    }

    /// Moves the clock forward by `us` microseconds.
    pub fn advance_us(&self, us: u64) {
        self.now_us.fetch_add(us, Ordering::Relaxed);
    }
}

impl Clock for VirtualClock {
    fn now_ms(&self) -> u64 {
        self.now_us.load(Ordering::Relaxed) / 1000
    }

    fn now_us(&self) -> u64 {
        self.now_us.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_system_clock_stands_still_on_its_thread_only() {
        let c = SystemClock;
        let before = c.now_us();
        {
            let _outer = PinnedTime::at_us(5_000_000);
            assert_eq!(c.now_us(), 5_000_000);
            assert_eq!(c.now_ms(), 5_000);
            {
                let _inner = PinnedTime::at_us(7_000_000);
                assert_eq!(c.now_ms(), 7_000);
            }
            assert_eq!(c.now_ms(), 5_000, "the outer pin is back");
            let other = std::thread::spawn(|| SystemClock.now_us()).join().unwrap();
            assert!(other >= before, "another thread reads the wall clock");
        }
        assert!(c.now_us() >= before, "unpinned: the wall clock again");
        let pinned = PinnedTime::now();
        let t = c.now_us();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(c.now_us(), t);
        drop(pinned);
        assert!(c.now_us() > t);
    }

    #[test]
    fn virtual_clock_is_shared_and_monotone() {
        let c = VirtualClock::new(1_000);
        let d = c.clone();
        d.advance_ms(500);
        assert_eq!(c.now_ms(), 1_500);
        c.set_ms(10);
        assert_eq!(d.now_ms(), 1_500, "setting an earlier time is ignored");
        c.set_us(2_000_500);
        assert_eq!(d.now_ms(), 2_000);
        assert_eq!(d.now_us(), 2_000_500);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
