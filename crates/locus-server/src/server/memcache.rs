//! The memcached connection path: accept loop and connection task of the `[memcached]`
//! listeners. Same shape as the RESP path (`conn.rs`): read, parse every complete request and
//! execute up to [`MAX_BATCH`] of them under one engine lock, write the replies; a data block a
//! refused storage command declared is swallowed as it arrives, as memcached's `conn_swallow`.

use locus_common::PinnedTime;
use locus_protocol::memcache::{self, AuthStep, ErrorKind, ReplyWriter as McWriter};

use super::conn::{READ_CHUNK, flush, register};
use super::*;
use crate::memcache::crawler;
use crate::memcache::exec::{self as mc_exec, McConn, McCtx};
use crate::memcache::{Counters, McListener, McState};

/// How many times a connection with input steps aside while another worker holds the engine
/// lock before it waits for the lock (see [`engine_turn`]).
const LOCK_YIELDS: u32 = 8;

/// Lets the worker thread serve other connections (their reads, parsing and writes need no
/// engine lock) while another worker holds the engine lock, up to [`LOCK_YIELDS`] times, instead
/// of putting the thread to sleep on the lock at once. memcached's workers contend only for
/// per-item locks; with one engine lock, a worker that sleeps on it must be woken and
/// scheduled again, which on a loaded machine costs far more than the critical section (a
/// 16-key get holds it for some microseconds).
async fn engine_turn(shared: &Shared) {
    for _ in 0..LOCK_YIELDS {
        if !shared.engine_busy() {
            return;
        }
        tokio::task::yield_now().await;
    }
}

/// Accepts memcached connections on one listener until shutdown.
pub async fn accept_loop(
    shared: Arc<Shared>,
    mc: Arc<McState>,
    listener: TcpListener,
    route: McListener,
) {
    let mut shutdown = shared.shutdown_rx();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let Ok((sock, addr)) = accepted else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let max = shared.config().server.maxclients;
        // memcached's -c, per tenant: the tenant this listener's connections count in.
        let tenant = counted_tenant(&mc, route);
        let tenant_full = tenant
            .is_some_and(|m| m.counters.curr_connections.load(Ordering::Relaxed) >= mc.maxconns);
        if tenant_full || shared.stats().connected.load(Ordering::Relaxed) >= max {
            shared
                .stats()
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            if let Some(m) = tenant {
                Counters::bump(&m.counters.rejected_connections);
            }
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock.write_all(b"ERROR Too many open connections\r\n").await;
            });
            continue;
        }
        shared.stats().connected.fetch_add(1, Ordering::Relaxed);
        shared
            .stats()
            .total_connections
            .fetch_add(1, Ordering::Relaxed);
        let sh = shared.clone();
        let mc = mc.clone();
        tokio::spawn(async move {
            let info = register(&sh, &sock, addr);
            let id = info.id;
            count_connection(&mc, &info, route);
            let last = connection(&sh, &mc, sock, &info, route).await;
            if let Some(m) = counted_tenant(&mc, last) {
                m.counters.curr_connections.fetch_sub(1, Ordering::Relaxed);
            }
            sh.clients.lock().remove(&id);
            sh.stats().connected.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// The tenant whose connection gauges and byte counters a connection routed by `l` counts in:
/// its scope, and, with `[memcached] auth`, only once it is bound (an unauthenticated
/// connection on the shared port belongs to no tenant yet).
fn counted_tenant(mc: &McState, l: McListener) -> Option<&crate::memcache::McTenant> {
    if mc.auth && l.bound.is_none() {
        return None;
    }
    mc.scope(l).and_then(|t| mc.tenant(t))
}

/// Counts a connection (new, or just authenticated) in its tenant's gauges.
fn count_connection(mc: &McState, info: &ClientInfo, l: McListener) {
    if let (Some(m), Some(t)) = (counted_tenant(mc, l), mc.scope(l)) {
        info.tenant.store(t.0, Ordering::Relaxed);
        Counters::bump(&m.counters.curr_connections);
        Counters::bump(&m.counters.total_connections);
    }
}

/// Serves one connection; returns its routing at the end (with the tenant it authenticated as).
async fn connection(
    shared: &Shared,
    mc: &McState,
    mut sock: TcpStream,
    info: &ClientInfo,
    route: McListener,
) -> McListener {
    let mut conn = McConn::new(route);
    let mut counters = counted_tenant(mc, route).map(|m| &m.counters);
    let mut stop = StopSignal::new(info, shared, false);
    let mut inbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    // Bytes of a refused data block still to discard.
    let mut swallow = 0usize;
    loop {
        let (timeout, out_limit) = {
            let c = shared.config();
            (
                c.server.timeout.0,
                c.limits.client_output_buffer_limit.normal,
            )
        };
        if inbuf.capacity() - inbuf.len() < READ_CHUNK {
            inbuf.reserve(READ_CHUNK);
        }
        let idle = async {
            if timeout.is_zero() {
                std::future::pending::<()>().await;
            } else {
                tokio::time::sleep(timeout).await;
            }
        };
        let n = tokio::select! {
            biased;
            r = sock.read_buf(&mut inbuf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            () = &mut stop => break,
            () = idle => {
                if let Some(c) = counters {
                    Counters::bump(&c.idle_kicks);
                }
                break;
            }
        };
        shared
            .stats()
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
        if let Some(c) = counters {
            c.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        }
        engine_turn(shared).await;
        let mut consumed = 0;
        let mut gone = false;
        loop {
            if swallow > 0 {
                let k = swallow.min(inbuf.len() - consumed);
                swallow -= k;
                consumed += k;
            }
            let n = process(
                shared,
                mc,
                &mut conn,
                &inbuf[consumed..],
                &mut out,
                &mut swallow,
            );
            consumed += n;
            if counters.is_none() && conn.listener.bound.is_some() {
                // Just authenticated: from now on the connection is its tenant's.
                count_connection(mc, info, conn.listener);
                counters = counted_tenant(mc, conn.listener).map(|m| &m.counters);
            }
            // An lru_crawler crawl or dump runs to its end before the next request is read,
            // one engine-lock step at a time.
            while let Some(mut crawl) = conn.crawl.take() {
                let done = {
                    let mut eng = shared.engine();
                    crawler::step(&mut eng, mc, &mut crawl, &mut out)
                };
                if !done {
                    conn.crawl = Some(crawl);
                }
                if (out.len() >= OUTPUT_FLUSH || done)
                    && send(shared, info, &mut sock, &mut out, out_limit, counters)
                        .await
                        .is_err()
                {
                    gone = true;
                    break;
                }
                if info.killed() || shared.is_shutting_down() {
                    break;
                }
            }
            if gone {
                break;
            }
            if n == 0 || conn.close || consumed == inbuf.len() {
                break;
            }
            if out.len() >= OUTPUT_FLUSH
                && send(shared, info, &mut sock, &mut out, out_limit, counters)
                    .await
                    .is_err()
            {
                gone = true;
                break;
            }
        }
        if gone {
            break;
        }
        inbuf.drain(..consumed);
        info.qbuf.store(inbuf.len() as u64, Ordering::Relaxed);
        if !out.is_empty()
            && send(shared, info, &mut sock, &mut out, out_limit, counters)
                .await
                .is_err()
        {
            break;
        }
        if inbuf.is_empty() && inbuf.capacity() > 1 << 20 {
            inbuf.shrink_to(READ_CHUNK);
        }
        if conn.close || info.killed() || shared.is_shutting_down() {
            break;
        }
    }
    *info.waker.lock() = None;
    let _ = sock.shutdown().await;
    conn.listener
}

/// Writes `out` to the client (see `conn::flush`), counted in the tenant's `bytes_written`.
async fn send(
    shared: &Shared,
    info: &ClientInfo,
    sock: &mut TcpStream,
    out: &mut Vec<u8>,
    limit: crate::config::OutputLimit,
    counters: Option<&Counters>,
) -> Result<(), ()> {
    if let Some(c) = counters {
        c.bytes_written
            .fetch_add(out.len() as u64, Ordering::Relaxed);
    }
    // Replies within the output limits go straight to the socket, which takes them whole almost
    // always (an unpipelined get's reply is one small write): the limit checks, the pending
    // gauge and the kill-aware wait of `flush` matter only for what the kernel does not take
    // now, which goes on through `flush`, counted there.
    let within = |l: u64| l == 0 || out.len() as u64 <= l;
    if within(limit.hard) && within(limit.soft) {
        assert_unlocked("a write to a client's socket");
        let n = match sock.try_write(out) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(_) => return Err(()),
        };
        if n > 0 {
            shared
                .stats()
                .net_output_bytes
                .fetch_add(n as u64, Ordering::Relaxed);
            crate::instant::count_output(info.tenant.load(Ordering::Relaxed), n as u64);
        }
        if n == out.len() {
            out.clear();
            if out.capacity() > 1 << 20 {
                out.shrink_to(READ_CHUNK);
            }
            return Ok(());
        }
        out.drain(..n);
    }
    flush(shared, info, sock, out, limit).await
}

/// One step of the ASCII authentication exchange (`[memcached] auth`) at the start of `buf`:
/// replies as memcached and binds the connection to the tenant whose credentials it sent.
/// Returns the bytes consumed, 0 while the request is incomplete.
fn authenticate(mc: &McState, conn: &mut McConn, buf: &[u8], out: &mut Vec<u8>) -> usize {
    let Some((step, n)) = memcache::parse_auth(buf, &mc.limits) else {
        return 0;
    };
    let mut w = McWriter::new(out);
    match step {
        AuthStep::Credentials { user, password } => {
            match mc.authenticate(conn.listener, user, password) {
                Some(t) => {
                    conn.listener.bound = Some(t);
                    w.stored();
                }
                None => w.line(AuthStep::FAILURE.as_bytes()),
            }
        }
        AuthStep::Refused(line) => w.line(line.as_bytes()),
        AuthStep::Close => conn.close = true,
    }
    n
}

/// Takes the engine lock, noting the slow-tier accesses so far when the emulated delay is on.
fn lock_counting<'a>(shared: &'a Shared, slow_before: &mut u64) -> crate::server::EngineGuard<'a> {
    let g = shared.engine();
    if shared.tier_delay_ns() > 0 {
        *slow_before = crate::tiers::slow_accesses(&g);
    }
    g
}

/// Parses and executes up to [`MAX_BATCH`] requests of `buf` under one engine lock, appending
/// the replies to `out`. Returns the bytes consumed; `swallow` receives the part of a refused
/// data block that has not arrived yet.
fn process(
    shared: &Shared,
    mc: &McState,
    conn: &mut McConn,
    buf: &[u8],
    out: &mut Vec<u8>,
    swallow: &mut usize,
) -> usize {
    let mut pos = 0;
    let mut eng: Option<crate::server::EngineGuard<'_>> = None;
    let mut slow_before = 0;
    // The clock is read once a batch, once the lock is held: the batch runs under one lock
    // hold, and every engine read of the clock in it (LRU stamps, the slab controller's access
    // times, TTL checks) gets that time from the pin. memcached's own clock ticks once a second.
    let mut pin: Option<PinnedTime> = None;
    let mut now_ms = None;
    let mut done = 0;
    // Commands parsed, added to the server's total once a batch (one atomic add on a line
    // every worker writes, not one a request).
    let mut commands = 0u64;
    while pos < buf.len() && done < MAX_BATCH && !conn.close && conn.crawl.is_none() {
        if mc.auth && conn.listener.bound.is_none() {
            match authenticate(mc, conn, &buf[pos..], out) {
                0 => break,
                n => {
                    pos += n;
                    done += 1;
                    continue;
                }
            }
        }
        match memcache::parse(&buf[pos..], &mc.limits) {
            Ok(None) => break,
            Ok(Some((req, n))) => {
                pos += n;
                done += 1;
                commands += 1;
                let eng = eng.get_or_insert_with(|| {
                    let g = lock_counting(shared, &mut slow_before);
                    pin = Some(PinnedTime::now());
                    g
                });
                let now_ms = *now_ms.get_or_insert_with(|| eng.now_ms());
                let start = out.len();
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let mut cx = McCtx {
                        eng,
                        mc,
                        shared,
                        conn,
                        now_ms,
                    };
                    mc_exec::execute(&mut cx, &req, out);
                }));
                if ran.is_err() {
                    // A bug in a handler: answer this client, close it, serve everyone else.
                    out.truncate(start);
                    McWriter::new(out).server_error("internal error; closing this connection");
                    shared
                        .stats()
                        .internal_errors
                        .fetch_add(1, Ordering::Relaxed);
                    conn.close = true;
                }
            }
            Err(e) => {
                done += 1;
                if e.kind == ErrorKind::TooLarge {
                    let eng = eng.get_or_insert_with(|| lock_counting(shared, &mut slow_before));
                    let now_ms = eng.now_ms();
                    let mut cx = McCtx {
                        eng,
                        mc,
                        shared,
                        conn,
                        now_ms,
                    };
                    mc_exec::refused_too_large(&mut cx, &buf[pos..]);
                }
                McWriter::new(out).protocol_error(&e);
                match e.skip(buf.len() - pos) {
                    Some((now, later)) => {
                        pos += now;
                        *swallow = later;
                        if later > 0 {
                            break;
                        }
                    }
                    None => {
                        conn.close = true;
                        pos = buf.len();
                    }
                }
            }
        }
    }
    if done >= MAX_BATCH && pos < buf.len() {
        // More requests already read: the lock goes to the others before they run.
        if let Some(m) = mc.scope(conn.listener).and_then(|t| mc.tenant(t)) {
            Counters::bump(&m.counters.conn_yields);
        }
    }
    if commands > 0 {
        shared
            .stats()
            .total_commands
            .fetch_add(commands, Ordering::Relaxed);
    }
    drop(pin);
    if let Some(g) = eng.take() {
        let slow = if shared.tier_delay_ns() > 0 {
            crate::tiers::slow_accesses(&g).saturating_sub(slow_before)
        } else {
            0
        };
        drop(g);
        // The emulated slow tier's delay, spent off the lock (see `tiers`).
        crate::tiers::spend_delay(shared, slow);
    }
    pos
}
