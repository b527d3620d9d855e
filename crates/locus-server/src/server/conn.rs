//! The connection path: the accept loop, each client's task (read, execute a batch under one
//! engine lock, write the replies as they are produced, within the output buffer limits) and
//! the batch executor with its panic containment.

use super::*;

/// Accepts connections on one listener until shutdown.
pub async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, tenant: Option<TenantId>) {
    let mut shutdown = shared.shutdown_rx();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let (sock, addr) = match accepted {
            Ok(x) => x,
            Err(_) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let max = shared.config().server.maxclients;
        if shared.stats().connected.load(Ordering::Relaxed) >= max {
            shared
                .stats()
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            });
            continue;
        }
        shared.stats().connected.fetch_add(1, Ordering::Relaxed);
        shared
            .stats()
            .total_connections
            .fetch_add(1, Ordering::Relaxed);
        // Everything else happens in the connection's own task: the accept loop only takes
        // connections off the queue, so a burst of connects never overflows the backlog.
        let sh = shared.clone();
        tokio::spawn(async move {
            let info = register(&sh, &sock, addr);
            let id = info.id;
            connection(sh.clone(), sock, info, tenant).await;
            sh.clients.lock().remove(&id);
            sh.stats().connected.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Sets a new connection's socket options and registers it in the client table.
pub(super) fn register(shared: &Shared, sock: &TcpStream, addr: SocketAddr) -> Arc<ClientInfo> {
    let _ = sock.set_nodelay(true);
    let keepalive = shared.config().server.tcp_keepalive.0;
    if !keepalive.is_zero() {
        // As Redis: probes after `tcp-keepalive` idle, a third of it apart.
        let ka = socket2::TcpKeepalive::new()
            .with_time(keepalive)
            .with_interval((keepalive / 3).max(std::time::Duration::from_secs(1)));
        let _ = socket2::SockRef::from(sock).set_tcp_keepalive(&ka);
    }
    let laddr = sock.local_addr().unwrap_or(addr);
    let now = shared.clock().now_ms();
    let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
    let info = Arc::new(ClientInfo::new(id, addr, laddr, now));
    shared.clients.lock().insert(info.id, info.clone());
    info
}

pub(super) const READ_CHUNK: usize = 16 * 1024;
/// Pending reply bytes past which a batch stops and the replies are written before more
/// commands run (backpressure on clients that pipeline faster than they read).
pub const OUTPUT_FLUSH: usize = 128 * 1024;

/// Most commands executed under one engine lock acquisition.
pub const MAX_BATCH: usize = 1024;

/// A batch that has held the engine lock this long, between two of its commands, lets any
/// connection waiting for the lock go first (issue 23: a deep pipeline of slow commands must
/// not stall the other tenants for its whole length).
const YIELD_AFTER: std::time::Duration = std::time::Duration::from_micros(500);

/// Commands between two looks at the clock for [`YIELD_AFTER`] (a clock read per command would
/// cost a few percent of a GET).
const YIELD_CHECK_EVERY: u64 = 16;

/// One request of a batch: the range of its arguments in the batch's argument vector, or the
/// protocol error to answer in its place.
type Slot = Result<(usize, usize), ProtocolError>;

/// What a connection keeps from one batch to the next so that a batch allocates nothing: one
/// vector for the arguments of every command in the batch (borrowed from the read buffer while
/// the batch runs, empty in between) and the per-command slots.
#[derive(Default)]
struct Scratch {
    args: Vec<Cow<'static, [u8]>>,
    slots: Vec<Slot>,
    /// Input consumed up to the end of each slot (so a batch can stop after any command).
    ends: Vec<usize>,
    /// The batch stopped before a command a CLIENT PAUSE holds: the pause's end (exec/pause).
    paused: Option<std::time::Instant>,
    /// How far the incomplete multibulk request at the start of the unconsumed input was checked
    /// (server/querybuf: a request sent in many reads is walked once, not once per read).
    pending: Option<locus_protocol::request::Pending>,
}

/// Empties `v` and returns it with another lifetime, keeping its allocation: the in-place
/// `collect` of a `vec::IntoIter` into a vector of a type with the same size and alignment
/// reuses the buffer (checked by the test `recycle_keeps_the_allocation`).
fn recycle<'b>(mut v: Vec<Cow<'_, [u8]>>) -> Vec<Cow<'b, [u8]>> {
    v.clear();
    v.into_iter().map(|_| Cow::Borrowed(&[][..])).collect()
}

/// Reads what the socket holds into `buf` without waiting (`WouldBlock` when nothing), as
/// `try_read_buf` would, but through tokio's `poll_read`, which forgets the socket's read
/// readiness after a short read (the kernel's buffer is empty then): the next wait for input
/// goes to epoll, not to a `recvfrom` that fails with EAGAIN (a third of the reads at -P 1 did).
async fn read_ready(sock: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut read = std::pin::pin!(sock.read_buf(buf));
    std::future::poll_fn(|cx| match read.as_mut().poll(cx) {
        Poll::Pending => Poll::Ready(Err(std::io::ErrorKind::WouldBlock.into())),
        done => done,
    })
    .await
}

/// Writes all of `out`: first straight away (the socket buffer has room almost always), and only
/// when the kernel takes part of it through the async path that waits for the socket to drain.
async fn write_out(sock: &mut TcpStream, out: &[u8]) -> std::io::Result<()> {
    super::assert_unlocked("a write to a client's socket");
    match sock.try_write(out) {
        Ok(n) if n == out.len() => Ok(()),
        Ok(n) => sock.write_all(&out[n..]).await,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => sock.write_all(out).await,
        Err(e) => Err(e),
    }
}

/// Writes `out` to the client and empties it, under the client class's output buffer limit:
/// pending replies over `hard` close the client at once, over `soft` for longer than
/// `soft_seconds` too (as Redis). `omem` shows the pending bytes meanwhile.
pub(super) async fn flush(
    shared: &Shared,
    info: &ClientInfo,
    sock: &mut TcpStream,
    out: &mut Vec<u8>,
    limit: crate::config::OutputLimit,
) -> Result<(), ()> {
    let pending = out.len() as u64;
    shared
        .stats()
        .net_output_bytes
        .fetch_add(pending, Ordering::Relaxed);
    crate::instant::count_output(info.tenant.load(Ordering::Relaxed), pending);
    let over = |l: u64| l > 0 && pending > l;
    if over(limit.hard) {
        shared
            .stats()
            .output_limit_disconnections
            .fetch_add(1, Ordering::Relaxed);
        return Err(());
    }
    info.omem.store(pending, Ordering::Relaxed);
    // A kill (CLIENT KILL, a subscriber past its pubsub limit) or a shutdown ends a write that
    // waits for a client that does not read.
    let mut stop = StopSignal::new(info, shared, false);
    let write = async {
        tokio::select! {
            biased;
            r = write_out(sock, out) => r.map_err(|_| ()),
            () = &mut stop => Err(()),
        }
    };
    let written = if over(limit.soft) {
        let patience = Duration::from_secs(limit.soft_seconds);
        match tokio::time::timeout(patience, write).await {
            Ok(r) => r,
            Err(_) => {
                shared
                    .stats()
                    .output_limit_disconnections
                    .fetch_add(1, Ordering::Relaxed);
                Err(())
            }
        }
    } else {
        write.await
    };
    info.omem.store(0, Ordering::Relaxed);
    written?;
    out.clear();
    if out.capacity() > 1 << 20 {
        out.shrink_to(READ_CHUNK);
    }
    Ok(())
}

async fn connection(
    shared: Arc<Shared>,
    mut sock: TcpStream,
    info: Arc<ClientInfo>,
    listener_tenant: Option<TenantId>,
) {
    let mut st = ConnState::new(info.clone(), listener_tenant);
    st.reset(shared.tenancy(), shared.auth_required());
    let mut stop = StopSignal::new(&info, &shared, true);
    let mut scratch = Scratch::default();
    let mut inbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    // The most the query buffer held since its last resize (server/querybuf).
    let mut peak = 0;
    let mut last_input = tokio::time::Instant::now();
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    // The query buffer's charge to the tenant (server/querybuf).
    let mut charge = querybuf::Charge::default();
    loop {
        if info.qbuf_cron.swap(false, Ordering::Relaxed) {
            let idle = shared
                .coarse_now_ms()
                .saturating_sub(info.last_active_ms.load(Ordering::Relaxed));
            querybuf::resize(&mut inbuf, &mut peak, idle);
            querybuf::publish(&info, &inbuf);
            charge.sync(&shared, qbuf_tenant(&st), inbuf.capacity(), inbuf.len());
        }
        let (timeout, limits, qbuf_limit, out_limit) = {
            let c = shared.config();
            // A monitor is a stream of pushes like a subscriber (exec/monitor).
            let subscribed = st.subscriptions() > 0
                || (exec::monitor::ACTIVE.load(Ordering::Relaxed)
                    && exec::monitor::is_monitor(info.id));
            let out = &c.limits.client_output_buffer_limit;
            (
                // As Redis: the idle timeout does not apply to a subscriber.
                if subscribed {
                    Duration::ZERO
                } else {
                    c.server.timeout.0
                },
                c.limits.protocol_limits(),
                c.limits.client_query_buffer_limit.0,
                if subscribed { out.pubsub } else { out.normal },
            )
        };
        let idle = async {
            if timeout.is_zero() {
                std::future::pending::<()>().await;
            } else {
                // From the last input, not from this wait: a wake that read nothing (pub/sub,
                // the query buffer's resize) does not put the timeout off.
                tokio::time::sleep_until(last_input + timeout).await;
            }
        };
        // `biased`: the socket first, no random branch order per poll. A client that keeps the
        // socket busy still sees a kill or a shutdown: both are checked after every batch.
        // A kill, a shutdown or pub/sub messages end the wait (`stop`); messages alone read
        // nothing and only write them out below.
        // The buffer grows (or is allocated again after an idle resize) only when input is there.
        let n = tokio::select! {
            biased;
            r = sock.readable() => match r {
                Err(_) => break,
                Ok(()) => {
                    if inbuf.capacity() - inbuf.len() < READ_CHUNK {
                        inbuf.reserve(READ_CHUNK);
                    }
                    match read_ready(&mut sock, &mut inbuf).await {
                        Ok(0) => break,
                        Ok(n) => {
                            peak = peak.max(inbuf.len());
                            last_input = tokio::time::Instant::now();
                            Some(n)
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Some(0),
                        Err(_) => break,
                    }
                }
            },
            () = &mut stop => None,
            () = idle => break,
        };
        let n = match n {
            Some(n) => n,
            None if stop.stopped() => break,
            None => 0,
        };
        shared
            .stats()
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
        crate::instant::count_input(info.tenant.load(Ordering::Relaxed), n as u64);
        // Execute in batches of at most MAX_BATCH commands, so one client's deep pipeline cannot
        // hold the engine lock for long; stop when no complete command is left.
        let mut consumed = 0;
        let mut gone = false;
        loop {
            let n = process(
                &shared,
                &mut st,
                &inbuf[consumed..],
                &limits,
                &mut out,
                &mut scratch,
            );
            consumed += n;
            if let Some(job) = st.migrate.take() {
                // MIGRATE's round trip, with the engine unlocked; its reply follows the others.
                exec::dump::migrate::run(&shared, &mut st, job, &mut out).await;
                continue;
            }
            if let Some(until) = scratch.paused.take() {
                // A CLIENT PAUSE holds the next command: the replies so far go out, then the
                // connection waits, holding no lock, and runs it when the pause ends.
                if !out.is_empty()
                    && flush(&shared, &info, &mut sock, &mut out, out_limit)
                        .await
                        .is_err()
                {
                    gone = true;
                    break;
                }
                let tenant = st.scope().flatten().or(st.tenant);
                let stop = StopSignal::new(&info, &shared, false);
                exec::pause::wait(info.id, st.admin, tenant, until, stop).await;
                if info.killed() || shared.is_shutting_down() {
                    gone = true;
                    break;
                }
                continue;
            }
            if let Some(waiting) = st.block.waiting.take() {
                // A blocking command found nothing: the replies so far go out, then the
                // connection waits for its key (the rest of the input waits too, as in Redis).
                let limits = (out_limit, qbuf_limit);
                // The blocking command is executed: its bytes leave the query buffer (CLIENT
                // LIST's qbuf shows what waits behind it, as Redis's).
                inbuf.drain(..consumed);
                consumed = 0;
                querybuf::publish(&info, &inbuf);
                match wait_blocked(
                    &shared, &info, &mut sock, &mut inbuf, &mut out, limits, waiting,
                )
                .await
                {
                    Ok(()) => continue,
                    Err(()) => {
                        gone = true;
                        break;
                    }
                }
            }
            if n == 0 || st.close || consumed == inbuf.len() {
                break;
            }
            if out.len() >= OUTPUT_FLUSH {
                info.qbuf
                    .store((inbuf.len() - consumed) as u64, Ordering::Relaxed);
                if flush(&shared, &info, &mut sock, &mut out, out_limit)
                    .await
                    .is_err()
                {
                    gone = true;
                    break;
                }
            }
        }
        if gone {
            break;
        }
        inbuf.drain(..consumed);
        querybuf::publish(&info, &inbuf);
        if !st.close && inbuf.len() as u64 > qbuf_limit {
            // As Redis: closed without a reply (its input cannot be trusted to end), and logged.
            eprintln!(
                "Closing client that reached max query buffer length: id={} addr={} qbuf={}",
                info.id,
                info.addr,
                inbuf.len()
            );
            st.close = true;
        }
        if !st.close && !charge.sync(&shared, qbuf_tenant(&st), inbuf.capacity(), inbuf.len()) {
            // Its tenant's budget cannot hold what it sent: closed as the query buffer limit
            // closes a client (server/querybuf).
            eprintln!(
                "Closing client whose query buffer its tenant's memory cannot hold: id={} addr={} qbuf={} tenant={}",
                info.id,
                info.addr,
                inbuf.len(),
                info.tenant.load(Ordering::Relaxed)
            );
            st.close = true;
        }
        // Messages published to this client go after the replies of its own commands.
        info.take_inbox(&mut out);
        if !out.is_empty()
            && flush(&shared, &info, &mut sock, &mut out, out_limit)
                .await
                .is_err()
        {
            break;
        }
        // (A buffer grown by a big argument is trimmed by the tick task's resize within about a
        // second: server/querybuf.)
        if st.close || info.killed() || shared.is_shutting_down() {
            break;
        }
    }
    *info.waker.lock() = None;
    charge.release(&shared);
    if !st.multi_charged.is_empty() {
        // A transaction left queued: its charge goes back to its tenants, and the queue's
        // memory to the allocator.
        exec::transaction::release_queue(&mut shared.engine(), &mut st.multi_charged);
        st.multi = None;
        crate::malloc::trim();
    }
    if !st.watched.is_empty() {
        shared.unwatch_all(info.id, &st.watched);
    }
    if st.subscriptions() > 0 {
        st.unsubscribe_all(&mut shared.pubsub());
    }
    if st.tracking.on {
        shared.tracking().disable(info.id);
    }
    exec::monitor::remove(info.id);
    let _ = sock.shutdown().await;
}

/// Waits, with the engine unlocked, until a blocked client is served (its reply is appended to
/// `out`), times out (the timeout reply), or goes (disconnect, kill, shutdown: `Err`, after it
/// left the registry). Input that arrives meanwhile is kept for after (up to the query buffer
/// limit: past it the client is closed, as Redis does); pub/sub messages go out. `limits`: the
/// output buffer limit and the query buffer limit.
async fn wait_blocked(
    shared: &Shared,
    info: &ClientInfo,
    sock: &mut TcpStream,
    inbuf: &mut Vec<u8>,
    out: &mut Vec<u8>,
    limits: (crate::config::OutputLimit, u64),
    waiting: exec::blocking::Waiting,
) -> Result<(), ()> {
    let (out_limit, qbuf_limit) = limits;
    let b = shared.blocking();
    let slot = &waiting.slot;
    let mut stop = StopSignal::new(info, shared, true);
    loop {
        if !out.is_empty() && flush(shared, info, sock, out, out_limit).await.is_err() {
            b.cancel(shared, info.id);
            return Err(());
        }
        if inbuf.capacity() - inbuf.len() < READ_CHUNK {
            inbuf.reserve(READ_CHUNK);
        }
        let deadline = async {
            match waiting.deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            biased;
            () = slot.notified() => {
                if let Some(reply) = slot.take() {
                    out.extend_from_slice(&reply);
                    return Ok(());
                }
            }
            () = &mut stop => {
                if stop.stopped() {
                    b.cancel(shared, info.id);
                    return Err(());
                }
                // The tick's query buffer resize: done here too (the flag must be cleared, or
                // the wait would spin), with what the buffer holds now as its peak.
                if info.qbuf_cron.swap(false, Ordering::Relaxed) {
                    let idle = shared
                        .coarse_now_ms()
                        .saturating_sub(info.last_active_ms.load(Ordering::Relaxed));
                    let mut peak = inbuf.len();
                    querybuf::resize(inbuf, &mut peak, idle);
                    querybuf::publish(info, inbuf);
                }
                info.take_inbox(out);
            }
            () = deadline => {
                let reply = b.time_out(shared, info.id).or_else(|| slot.take());
                out.extend_from_slice(&reply.unwrap_or_default());
                return Ok(());
            }
            r = sock.read_buf(inbuf) => match r {
                Ok(0) | Err(_) => {
                    b.cancel(shared, info.id);
                    return Err(());
                }
                Ok(n) => {
                    shared.stats().net_input_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    crate::instant::count_input(info.tenant.load(Ordering::Relaxed), n as u64);
                    querybuf::publish(info, inbuf);
                    if inbuf.len() as u64 > qbuf_limit {
                        b.cancel(shared, info.id);
                        return Err(());
                    }
                }
            },
        }
    }
}

/// A command that panics, compiled into test builds only (the panic containment test).
#[cfg(test)]
pub(crate) const TEST_PANIC_COMMAND: &str = "locus.test-panic";

/// Parses every complete command in `buf` (at most [`MAX_BATCH`]), executes them under one
/// engine lock, appends the replies to `out`. Returns the bytes consumed.
fn process(
    shared: &Shared,
    st: &mut ConnState,
    buf: &[u8],
    limits: &locus_protocol::Limits,
    out: &mut Vec<u8>,
    scratch: &mut Scratch,
) -> usize {
    // As Redis: a client that has not authenticated where it must may send only small requests.
    let limits = &locus_protocol::Limits {
        unauthenticated: !st.authenticated,
        ..*limits
    };
    // The request at the start was found incomplete before: only its new bytes are checked.
    if let Some(p) = scratch.pending.as_mut()
        && !locus_protocol::request::resume_multibulk(buf, limits, p)
    {
        return 0;
    }
    scratch.pending = None;
    let mut args = recycle(std::mem::take(&mut scratch.args));
    let slots = &mut scratch.slots;
    slots.clear();
    let ends = &mut scratch.ends;
    ends.clear();
    let mut pos = 0;
    // Where an incomplete request starts, when the batch ends there.
    let mut incomplete = None;
    while pos < buf.len() {
        let mark = args.len();
        match parse_into(&buf[pos..], limits, &mut args) {
            Ok(Some(n)) => {
                pos += n;
                // An empty request (`*0`, an empty inline line) has no arguments and no reply.
                if args.len() > mark {
                    slots.push(Ok((mark, args.len())));
                    ends.push(pos);
                    if slots.len() >= MAX_BATCH {
                        break;
                    }
                }
            }
            Ok(None) => {
                incomplete = Some(pos);
                break;
            }
            Err(
                locus_protocol::ProtocolError::UnauthenticatedMultibulkLength
                | locus_protocol::ProtocolError::UnauthenticatedBulkLength,
            ) if !slots.is_empty() => {
                // A command before it (AUTH, HELLO) may log the client in: it runs first and
                // the request is parsed again afterwards, under the limits that then apply.
                break;
            }
            Err(e) => {
                // Every protocol error closes the connection after its reply, as Redis's
                // `setProtocolError` does, even where the framing is known (unbalanced quotes
                // in an inline line): nothing after it is parsed.
                match e.framing_lost() {
                    Some(n) => pos += n,
                    None => pos = buf.len(),
                }
                slots.push(Err(e));
                ends.push(pos);
                break;
            }
        }
    }
    if !slots.is_empty() {
        // A script past busy-reply-threshold holds the lock: this batch is answered without it
        // (BUSY, or SCRIPT KILL / FUNCTION KILL / SHUTDOWN NOSAVE), as Redis answers.
        let Some(mut eng) = exec::scripting::busy::lock_engine(shared) else {
            let mut w = ReplyWriter::new(out, st.proto);
            for slot in slots.iter() {
                match slot {
                    Ok((from, to)) => {
                        exec::scripting::busy::answer_busy(shared, st, &args[*from..*to], &mut w)
                    }
                    Err(e) => w.error(&e.to_string()),
                }
            }
            scratch.args = recycle(args);
            return pos;
        };
        exec::transaction::settle_after_busy(&mut eng, st);
        let delay = shared.tier_delay_ns() > 0;
        let slow_before = if delay {
            crate::tiers::slow_accesses(&eng)
        } else {
            0
        };
        // CLIENT LIST's `qbuf` while the batch runs: the input not yet consumed, the running
        // command included (Redis shows its query buffer with the command in it).
        st.info.qbuf.store(buf.len() as u64, Ordering::Relaxed);
        let mut proto = st.proto;
        let executed = {
            let mut executed = 0u64;
            // Where the next round of commands starts: a round ends early to let another
            // connection take the engine lock (see `YIELD_AFTER`).
            let mut next = 0;
            let mut held_since = std::time::Instant::now();
            while next < slots.len() {
                let mut ctx = Ctx {
                    eng: &mut eng,
                    fx: shared,
                    server: Some(shared),
                    conn: st,
                    w: ReplyWriter::new(out, proto),
                    tenant: None,
                };
                let mut stop = false;
                let mut yield_now = false;
                for (i, slot) in slots.iter().enumerate().skip(next) {
                    next = i + 1;
                    match slot {
                        Ok((from, to)) => {
                            let cmd = &args[*from..*to];
                            let found = exec::table::find(&cmd[0]);
                            if exec::pause::ACTIVE.load(Ordering::Relaxed)
                                && let Some(spec) = found.map(|i| &exec::table::COMMANDS[i])
                                && let Some(until) = exec::pause::holds(shared, ctx.conn, spec, cmd)
                            {
                                // Held by a CLIENT PAUSE: the batch ends before this command.
                                scratch.paused = Some(until);
                                pos = if i == 0 { 0 } else { ends[i - 1] };
                                stop = true;
                                break;
                            }
                            // CLIENT LIST shows the latest command, including the one running now.
                            ctx.conn.info.set_last_cmd(found, &cmd[0]);
                            if let Some(i) = found {
                                exec::connection::note_subcommand(
                                    &ctx.conn.info,
                                    &exec::table::COMMANDS[i],
                                    cmd,
                                );
                            }
                            executed += 1;
                            ctx.tenant = None;
                            // One time for the whole command, as Redis freezes it for a command
                            // (EXEC and scripts included): a TTL it computes is never already past
                            // by a later read of the clock, and the engine reads it for free.
                            let _pin = locus_common::PinnedTime::now();
                            let start = ctx.w.len();
                            if shared.tracking().active() {
                                shared.tracking().set_current(ctx.conn.info.id);
                            }
                            // A handler that panics (a bug) answers its own client with an error and
                            // closes that connection; the engine lock is released as usual (parking_lot
                            // does not poison) and every other client is served on.
                            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                                || {
                                    #[cfg(test)]
                                    if exec::is(&cmd[0], TEST_PANIC_COMMAND) {
                                        // `locus.test-panic [key value ...]`: the SETs first (a command
                                        // that panics half way through its writes), then the panic.
                                        for kv in cmd[1..].chunks_exact(2) {
                                            let set = [
                                                Cow::Borrowed(&b"SET"[..]),
                                                kv[0].clone(),
                                                kv[1].clone(),
                                            ];
                                            let found = exec::table::find(b"set");
                                            exec::dispatch_spec(
                                                &mut ctx,
                                                &set,
                                                found.map(|i| &exec::table::COMMANDS[i]),
                                            );
                                        }
                                        panic!(
                                            "{TEST_PANIC_COMMAND}: a deliberate panic (test builds only)"
                                        );
                                    }
                                    exec::dispatch_spec(
                                        &mut ctx,
                                        cmd,
                                        found.map(|i| &exec::table::COMMANDS[i]),
                                    );
                                },
                            ));
                            if ran.is_err() {
                                ctx.w.truncate(start);
                                ctx.w.error(&format!(
                                "ERR internal error while executing '{}'; closing this connection",
                                String::from_utf8_lossy(&cmd[0]).to_ascii_lowercase()
                            ));
                                shared
                                    .stats()
                                    .internal_errors
                                    .fetch_add(1, Ordering::Relaxed);
                                ctx.conn.close = true;
                            }
                            // CLIENT REPLY OFF / SKIP: the reply (or error) is dropped; the replies
                            // of the subscribe family are pushes in Redis and always go out.
                            if (ctx.conn.reply_off || ctx.conn.skip_current)
                                && !found.is_some_and(|i| {
                                    crate::exec::pubsub::is_subscription_command(
                                        exec::table::COMMANDS[i].name,
                                    )
                                })
                            {
                                ctx.w.truncate(start);
                            }
                            ctx.conn.skip_current = std::mem::take(&mut ctx.conn.skip_next);
                            // Clients blocked on the keys this command wrote are served now.
                            if shared.blocking().has_ready() {
                                exec::blocking::serve(ctx.eng, shared);
                            }
                            // Invalidations this command caused for its own client follow its
                            // reply (those of keys evicted for it precede it).
                            if shared.tracking().active() || ctx.conn.tracking.on {
                                exec::tracking::after_command(&mut ctx, found, start);
                            }
                            if ctx.conn.block.waiting.is_some() || ctx.conn.migrate.is_some() {
                                // This client blocked (or MIGRATE waits for the network): nothing
                                // more runs until it is served.
                                pos = ends[i];
                                stop = true;
                                break;
                            }
                        }
                        Err(e) => {
                            ctx.w.error(&e.to_string());
                            ctx.conn.close = true;
                        }
                    }
                    if ctx.conn.close || shared.is_shutting_down() {
                        stop = true;
                        break;
                    }
                    // Replies are written as they are produced: past OUTPUT_FLUSH bytes the batch
                    // stops here, the connection writes them out, and the rest of the input waits
                    // (a client that does not read is not served further: no unbounded buffer).
                    if ctx.w.len() >= OUTPUT_FLUSH && i + 1 < slots.len() {
                        pos = ends[i];
                        stop = true;
                        break;
                    }
                    // Between two commands (a pipeline promises no atomicity), a batch that has
                    // held the lock for YIELD_AFTER hands it to any connection waiting for it.
                    if executed.is_multiple_of(YIELD_CHECK_EVERY)
                        && i + 1 < slots.len()
                        && held_since.elapsed() >= YIELD_AFTER
                    {
                        yield_now = true;
                        break;
                    }
                }
                // The round's context ends here (its last use), so the lock can be bumped.
                proto = ctx.w.proto();
                if stop {
                    break;
                }
                if yield_now {
                    EngineGuard::bump(&mut eng);
                    held_since = std::time::Instant::now();
                }
            }
            executed
        };
        let slow_hits = if delay {
            crate::tiers::slow_accesses(&eng).saturating_sub(slow_before)
        } else {
            0
        };
        drop(eng);
        // The emulated slow tier's delay, spent off the lock (see `tiers`).
        crate::tiers::spend_delay(shared, slow_hits);
        shared
            .stats()
            .total_commands
            .fetch_add(executed, Ordering::Relaxed);
        crate::instant::count_ops(st.info.tenant.load(Ordering::Relaxed), executed);
        st.info
            .last_active_ms
            .store(shared.coarse_now_ms(), Ordering::Relaxed);
    }
    scratch.args = recycle(args);
    if scratch.args.capacity() > ARGS_KEEP {
        // A request of very many arguments does not keep its vector (server/querybuf).
        scratch.args = Vec::new();
    }
    if let Some(at) = incomplete.filter(|&at| at == pos) {
        // The batch ends at an incomplete request: the next call starts there and resumes.
        let mut p = locus_protocol::request::Pending::default();
        if !locus_protocol::request::resume_multibulk(&buf[at..], limits, &mut p) {
            scratch.pending = Some(p);
        }
    }
    pos
}

/// The tenant a connection's query buffer is charged to: the one its commands run in (none for
/// the admin or a client not logged in).
fn qbuf_tenant(st: &ConnState) -> Option<locus_engine::TenantId> {
    st.scope().flatten()
}

/// Most argument slots a connection keeps between batches.
const ARGS_KEEP: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycle_keeps_the_allocation() {
        let buf = b"abc".to_vec();
        let mut v: Vec<Cow<'_, [u8]>> = Vec::with_capacity(64);
        v.push(Cow::Borrowed(&buf[..]));
        v.push(Cow::Owned(b"owned".to_vec()));
        let (ptr, cap) = (v.as_ptr() as usize, v.capacity());
        let w: Vec<Cow<'static, [u8]>> = recycle(v);
        assert!(w.is_empty());
        assert_eq!((w.as_ptr() as usize, w.capacity()), (ptr, cap));
    }

    #[test]
    fn last_cmd_names() {
        let info = ClientInfo::new(
            1,
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
            0,
        );
        assert_eq!(info.last_cmd_name(), "NULL");
        info.set_last_cmd(exec::table::find(b"GeT"), b"GeT");
        assert_eq!(info.last_cmd_name(), "get");
        info.set_last_cmd(exec::table::find(b"NoSuch"), b"NoSuch");
        assert_eq!(info.last_cmd_name(), "nosuch");
        info.set_last_cmd(exec::table::find(b"SET"), b"SET");
        assert_eq!(info.last_cmd_name(), "set");
    }
}
