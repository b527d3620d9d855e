//! INFO's `instantaneous_ops_per_sec`, `instantaneous_input_kbps` and
//! `instantaneous_output_kbps`, computed as Redis computes them: every 100 ms the rate since the
//! previous sample (per second, integer) goes into a ring of 16 samples; the figure is their
//! mean (integer division for ops; bytes divided by 1024 for kbps, two decimals).
//!
//! Scope: the admin's INFO shows the server's rates (from the server-wide counters
//! `total_commands_processed`, `total_net_input_bytes`, `total_net_output_bytes`); a tenant's
//! INFO shows its own rates only (the server's would reveal other tenants' traffic), from
//! per-tenant counters the connection path bumps by the connection's tenant at the time. Tenants
//! with an id of [`MAX_TENANTS`] or more are not tracked per tenant (their INFO shows 0).
//!
//! ```text
//!  conn.rs: commands executed / bytes read / bytes written ──► count_*(tenant, n)  (atomics)
//!  tick_loop (every tick, >= 100 ms apart) ──► sample(): rate since last sample → ring[16]
//!  INFO ──► rates(scope): mean of the ring
//! ```

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use locus_engine::TenantId;
use parking_lot::Mutex;

/// Tenants tracked per tenant (ids 0..MAX_TENANTS).
pub const MAX_TENANTS: usize = 1024;
/// Samples averaged (Redis's `STATS_METRIC_SAMPLES`).
const SAMPLES: usize = 16;
/// Milliseconds between samples (Redis samples every 100 ms in serverCron).
const PERIOD_MS: u64 = 100;

/// One series: its ring of per-second rates and the reading at the last sample.
#[derive(Debug, Default, Clone, Copy)]
struct Series {
    last_ms: u64,
    last: u64,
    ring: [u64; SAMPLES],
    idx: usize,
}

impl Series {
    fn sample(&mut self, now_ms: u64, reading: u64) {
        let t = now_ms.saturating_sub(self.last_ms);
        let delta = reading.saturating_sub(self.last);
        self.ring[self.idx] = delta.saturating_mul(1000).checked_div(t).unwrap_or(0);
        self.idx = (self.idx + 1) % SAMPLES;
        self.last_ms = now_ms;
        self.last = reading;
    }

    fn mean(&self) -> u64 {
        self.ring.iter().sum::<u64>() / SAMPLES as u64
    }
}

/// Ops, input bytes, output bytes of one scope.
#[derive(Debug, Default, Clone, Copy)]
struct Rates {
    ops: Series,
    input: Series,
    output: Series,
}

struct Counters {
    ops: AtomicU64,
    input: AtomicU64,
    output: AtomicU64,
}

struct State {
    last_ms: u64,
    server: Rates,
    tenants: Vec<Rates>,
}

struct Instant {
    tenants: Vec<Counters>,
    state: Mutex<State>,
}

static INSTANT: LazyLock<Instant> = LazyLock::new(|| Instant {
    tenants: (0..MAX_TENANTS)
        .map(|_| Counters {
            ops: AtomicU64::new(0),
            input: AtomicU64::new(0),
            output: AtomicU64::new(0),
        })
        .collect(),
    state: Mutex::new(State {
        last_ms: 0,
        server: Rates::default(),
        tenants: vec![Rates::default(); MAX_TENANTS],
    }),
});

fn slot(tenant: u32) -> Option<&'static Counters> {
    INSTANT.tenants.get(tenant as usize)
}

/// `n` commands executed by a connection of `tenant` (`u32::MAX`: none).
#[inline]
pub fn count_ops(tenant: u32, n: u64) {
    if let Some(c) = slot(tenant) {
        c.ops.fetch_add(n, Ordering::Relaxed);
    }
}

/// `n` bytes read from a connection of `tenant`.
#[inline]
pub fn count_input(tenant: u32, n: u64) {
    if let Some(c) = slot(tenant) {
        c.input.fetch_add(n, Ordering::Relaxed);
    }
}

/// `n` bytes written to a connection of `tenant`.
#[inline]
pub fn count_output(tenant: u32, n: u64) {
    if let Some(c) = slot(tenant) {
        c.output.fetch_add(n, Ordering::Relaxed);
    }
}

/// Takes a sample when [`PERIOD_MS`] passed since the last one: `server` is the server-wide
/// (commands, input bytes, output bytes) reading; `tenants` the tenants to sample.
pub fn sample(now_ms: u64, server: (u64, u64, u64), tenants: impl Iterator<Item = TenantId>) {
    let mut st = INSTANT.state.lock();
    if now_ms.saturating_sub(st.last_ms) < PERIOD_MS {
        return;
    }
    st.last_ms = now_ms;
    st.server.ops.sample(now_ms, server.0);
    st.server.input.sample(now_ms, server.1);
    st.server.output.sample(now_ms, server.2);
    for t in tenants {
        let i = t.0 as usize;
        let Some(c) = INSTANT.tenants.get(i) else {
            continue;
        };
        let r = &mut st.tenants[i];
        r.ops.sample(now_ms, c.ops.load(Ordering::Relaxed));
        r.input.sample(now_ms, c.input.load(Ordering::Relaxed));
        r.output.sample(now_ms, c.output.load(Ordering::Relaxed));
    }
}

/// INFO's three lines for `scope` (`None`: the server; `Some(t)`: tenant `t`'s own).
pub fn info_lines(scope: Option<Option<TenantId>>) -> String {
    let st = INSTANT.state.lock();
    let r = match scope {
        None => st.server,
        Some(Some(t)) => st.tenants.get(t.0 as usize).copied().unwrap_or_default(),
        Some(None) => Rates::default(),
    };
    format!(
        "instantaneous_ops_per_sec:{}\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\n",
        r.ops.mean(),
        r.input.mean() as f64 / 1024.0,
        r.output.mean() as f64 / 1024.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_of_sixteen_rates() {
        let mut s = Series::default();
        // 1000 ops every 100 ms: 10,000 per second once the ring is full.
        for k in 1..=16u64 {
            s.sample(k * 100, k * 1000);
        }
        assert_eq!(s.mean(), 10_000);
        // Idle for 8 samples: half the ring is 0.
        for k in 17..=24u64 {
            s.sample(k * 100, 16_000);
        }
        assert_eq!(s.mean(), 5_000);
    }
}
