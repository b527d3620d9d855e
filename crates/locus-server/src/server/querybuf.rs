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

use std::sync::atomic::Ordering;

use super::{ClientInfo, Shared};

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
