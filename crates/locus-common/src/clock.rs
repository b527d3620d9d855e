//! Time sources.
//!
//! The engine never calls the system clock itself: it is handed a [`Clock`]. Times are
//! milliseconds since the Unix epoch for [`SystemClock`], and milliseconds since an arbitrary
//! origin for [`VirtualClock`] (a simulation starts wherever its trace starts).

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
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
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
