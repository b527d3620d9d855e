//! The client query buffer, sized as Redis sizes it (`clientsCronResizeQueryBuffer`).
//!
//! A connection reads into one buffer that grows to hold what the client sent (16 KiB at a time,
//! more for a big argument). CLIENT LIST shows its bytes not yet executed (`qbuf`) and its room
//! (`qbuf-free`), and counts its allocation in `tot-mem`. The tick task visits every client about
//! once a second (every tick when there are few) and asks those whose buffer has more than 4 KiB
//! of room to resize it; the connection does so the next time it waits for input: a client idle for more than 2 seconds gives its room back
//! entirely (an empty buffer frees its allocation, the next read allocates again); a busy one
//! whose buffer is over 32 KiB and more than twice the most it held since the last resize keeps
//! only that peak. The query buffer limit (`client-query-buffer-limit`) is checked on the bytes
//! held, after every read, as Redis does.
//!
//! Half-sent requests are memory a client makes the server hold, as Redis counts them in
//! `used_memory`: a tenant's connection charges its buffer's allocation beyond the first read
//! chunk ([`BASE`]) to the tenant's budget (`Engine::charge_outside`, evicting by the tenant's
//! policy as a write does), so it shows in the tenant's and the admin's `used_memory`, and a
//! tenant's clients cannot hold more than its budget (and [`TENANT_SLACK`]) in half-sent
//! requests: a connection whose incomplete request the budget cannot hold is closed and logged, as Redis's client eviction
//! (`maxmemory-clients`) closes the biggest clients. An incomplete multibulk request is not kept
//! parsed between reads: its elements are walked once as they arrive
//! (`locus_protocol::request::resume_multibulk`) and collected only when it is complete, so
//! `*1000000` followed by a trickle of one-byte arguments costs its bytes, not an argument vector
//! per read. Before authentication (where it is required) requests are limited as Redis limits
//! them: at most 10 elements of at most 16 KiB each.

use std::sync::atomic::Ordering;

use locus_engine::TenantId;

use super::{ClientInfo, Shared};

/// Bytes of a connection's query buffer that are not charged to its tenant: the first read
/// chunk, which every connection has while it reads (bounded by `maxclients`).
pub const BASE: usize = super::conn::READ_CHUNK;

/// Incomplete requests a tenant's connections may hold beyond what its budget takes before the
/// one that cannot be charged is closed: a transient failure to make room (its keys being
/// evicted, a controller's move) must not close a client sending an ordinary value, while
/// a flood past the budget is closed within these bytes.
pub const TENANT_SLACK: u64 = 4 << 20;

/// Bytes of incomplete requests held by each tenant's connections beyond [`BASE`] each.
static HELD: parking_lot::Mutex<Vec<u64>> = parking_lot::Mutex::new(Vec::new());

/// Adds `new - old` to tenant `t`'s held bytes; returns the new total.
fn note_held(t: TenantId, old: u64, new: u64) -> u64 {
    let mut v = HELD.lock();
    let i = t.0 as usize;
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] = (v[i] + new).saturating_sub(old);
    v[i]
}

/// What a connection's query buffer is charged to its tenant (given back when it closes).
#[derive(Debug, Default)]
pub struct Charge {
    tenant: Option<TenantId>,
    bytes: u64,
    /// Its part of [`HELD`].
    held: u64,
}

impl Charge {
    /// Brings the charge to the allocation of a buffer of `capacity` bytes, `held` of them an
    /// incomplete request, held for `tenant` (`None`: the admin, or a client not logged in:
    /// nothing charged). When the tenant's budget cannot take the whole allocation (its room
    /// is trimmed within a second by [`cron`]), the incomplete request's bytes are what must
    /// fit, and when they cannot either, the connection is closed (`false`) only once its
    /// tenant's incomplete requests pass [`TENANT_SLACK`]: a client whose pipeline ran meanwhile
    /// is not closed for the room its buffer keeps, nor one value for a failed eviction.
    pub fn sync(
        &mut self,
        shared: &Shared,
        tenant: Option<TenantId>,
        capacity: usize,
        held: usize,
    ) -> bool {
        let (want, pending) = match tenant {
            Some(_) => (
                capacity.saturating_sub(BASE) as u64,
                held.saturating_sub(BASE) as u64,
            ),
            None => (0, 0),
        };
        if tenant == self.tenant && want == self.bytes && pending == self.held {
            return true;
        }
        if tenant != self.tenant
            && let Some(t) = self.tenant
        {
            note_held(t, std::mem::take(&mut self.held), 0);
        }
        let total = tenant.map_or(0, |t| note_held(t, self.held, pending));
        self.held = pending;
        if tenant == self.tenant && want == self.bytes {
            return true;
        }
        if want == 0 && self.bytes == 0 {
            // Nothing charged and nothing to charge (a new connection learning its tenant):
            // no engine lock, which a busy script may hold for seconds (the connection's first
            // command is then answered BUSY, not held until the script ends).
            self.tenant = tenant;
            return true;
        }
        let mut eng = shared.engine();
        if tenant != self.tenant {
            if let Some(t) = self.tenant.take() {
                eng.release_outside(t, std::mem::take(&mut self.bytes));
            }
            self.tenant = tenant;
        }
        let Some(t) = tenant else {
            return true;
        };
        if want < self.bytes {
            eng.release_outside(t, self.bytes - want);
            self.bytes = want;
            return true;
        }
        if eng.charge_outside(t, want - self.bytes).is_ok() {
            self.bytes = want;
            return true;
        }
        if pending <= self.bytes {
            return true;
        }
        if eng.charge_outside(t, pending - self.bytes).is_ok() {
            self.bytes = pending;
            return true;
        }
        total <= TENANT_SLACK
    }

    /// Gives the charge back (the connection is closing).
    pub fn release(&mut self, shared: &Shared) {
        if let Some(t) = self.tenant
            && self.held > 0
        {
            note_held(t, std::mem::take(&mut self.held), 0);
        }
        if let Some(t) = self.tenant.take()
            && self.bytes > 0
        {
            shared
                .engine()
                .release_outside(t, std::mem::take(&mut self.bytes));
        }
    }
}

/// Redis's `PROTO_RESIZE_THRESHOLD`: a busy client's buffer is trimmed only above this size.
pub const RESIZE_THRESHOLD: usize = 32 * 1024;
/// Room below which a buffer is never resized (Redis's "wasting at least a few kbytes").
pub const MIN_WASTE: usize = 4 * 1024;
/// A client idle for longer than this (ms) gives all its room back.
pub const IDLE_MS: u64 = 2000;
/// Redis's `CLIENTS_CRON_MIN_ITERATIONS`: clients visited per tick at least.
pub const CRON_MIN_CLIENTS: usize = 5;

/// Resizes `buf` as Redis's cron does, given the most it held since the last resize (`peak`)
/// and how long the client has been idle; then restarts the peak from what it holds now.
pub fn resize(buf: &mut Vec<u8>, peak: &mut usize, idle_ms: u64) {
    let (len, cap) = (buf.len(), buf.capacity());
    if cap - len > MIN_WASTE {
        if idle_ms > IDLE_MS {
            buf.shrink_to_fit();
        } else if cap > RESIZE_THRESHOLD && cap / 2 > *peak {
            buf.shrink_to(len.max(*peak));
        }
    }
    *peak = buf.len();
}

/// Publishes a buffer's figures for CLIENT LIST and INFO.
pub fn publish(info: &ClientInfo, buf: &Vec<u8>) {
    info.qbuf.store(buf.len() as u64, Ordering::Relaxed);
    info.qbuf_free
        .store((buf.capacity() - buf.len()) as u64, Ordering::Relaxed);
}

/// The tick task's part, as Redis's `clientsCron`: every tick visits the next `clients / hz`
/// clients (at least [`CRON_MIN_CLIENTS`]), so that each is seen about once a second, more often
/// when there are few; asks those with more than [`MIN_WASTE`] bytes of room to resize their
/// buffer, and wakes them if they wait for input.
pub fn cron(shared: &Shared, hz: u32) {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let clients = shared.clients.lock();
    let n = clients.len();
    let visit = (n / hz.max(1) as usize).max(CRON_MIN_CLIENTS).min(n);
    let next = NEXT.load(Ordering::Relaxed);
    let mut last = next;
    for (id, c) in clients
        .range(next..)
        .chain(clients.range(..next))
        .take(visit)
    {
        last = *id;
        if c.qbuf_free.load(Ordering::Relaxed) > MIN_WASTE as u64 {
            c.qbuf_cron.store(true, Ordering::Relaxed);
            // Woken as pub/sub wakes a subscriber: the waker stays registered.
            if let Some(w) = c.waker.lock().as_ref() {
                w.wake_by_ref();
            }
        }
    }
    NEXT.store(last.wrapping_add(1), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_clients_give_their_room_back() {
        let mut buf = Vec::with_capacity(16 * 1024);
        let mut peak = 40;
        resize(&mut buf, &mut peak, 1000);
        assert_eq!(buf.capacity(), 16 * 1024, "not idle, below the threshold");
        resize(&mut buf, &mut peak, 3000);
        assert_eq!(buf.capacity(), 0);
        // A partial command stays, its room goes.
        let mut buf = Vec::with_capacity(16 * 1024);
        buf.extend_from_slice(b"*1\r\n$4\r\nPI");
        resize(&mut buf, &mut peak, 3000);
        assert_eq!(buf.capacity(), buf.len());
    }

    #[test]
    fn busy_clients_keep_their_recent_peak() {
        let mut buf: Vec<u8> = Vec::with_capacity(512 * 1024);
        let mut peak = 130;
        resize(&mut buf, &mut peak, 0);
        assert!(buf.capacity() >= 130 && buf.capacity() < 512 * 1024);
        assert_eq!(peak, 0);
        // Below the threshold a busy buffer keeps its size.
        let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
        let mut peak = 0;
        resize(&mut buf, &mut peak, 0);
        assert_eq!(buf.capacity(), 16 * 1024);
        // A buffer used at more than half its size keeps it.
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        let mut peak = 40 * 1024;
        resize(&mut buf, &mut peak, 0);
        assert_eq!(buf.capacity(), 64 * 1024);
    }
}
