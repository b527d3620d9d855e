//! Command execution: the command table, tenant routing, arity checks, and the edge where typed
//! errors become Redis wire errors.
//!
//! ```text
//!  Command args ──► lookup (table.rs) ──► auth gate ──► arity ──► tenant routing ──► handler
//!                                                                    (Route)          │
//!                      ReplyWriter ◄── error text (CmdError::wire) ◄── Err ───────────┤
//!                      ReplyWriter ◄───────────────────────────────────── Ok (reply) ─┘
//! ```
//!
//! One file per command family: [`strings`], [`bitops`], [`keyspace`], [`expire`], [`connection`],
//! [`transaction`] (MULTI/EXEC/WATCH), [`types`] (hashes, lists, ...) with [`blocking`] (clients
//! waiting for a key), and under [`admin`] one file per server command (COMMAND,
//! CONFIG, INFO, MEMORY/OBJECT, SHUTDOWN, LOCUS.TENANT, LOCUS.CONTROLLER); [`table`] is the
//! command table, one row per command; [`longdouble`] is INCRBYFLOAT's Redis-exact arithmetic. Handlers run with the
//! engine lock held (one acquisition per batch of up to `server::MAX_BATCH` pipelined commands) and
//! write their reply only on success; on error the dispatcher discards any partial output and
//! writes the error. Inside MULTI the dispatcher queues instead of running. A data command
//! reaches beyond its keys only through its effects sink ([`effects`], `ctx.fx`); the commands
//! that span tenants or the server read it through [`Ctx::shared`].

pub mod admin;
pub mod bitops;
pub mod blocking;
pub mod cluster;
pub mod connection;
pub mod dump;
pub mod effects;
pub mod errorstats;
pub mod expire;
pub mod geo;
pub mod hll;
pub mod keyspace;
pub mod keyspecs;
pub mod latency;
pub mod lazyfree;
pub mod longdouble;
pub mod monitor;
pub mod notify;
pub mod pause;
pub mod privilege;
pub mod pubsub;
pub mod scripting;
pub mod slowlog;
pub mod sort;
pub mod strings;
pub mod table;
pub mod tracking;
pub mod transaction;
pub mod types;
pub mod wait;

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use locus_engine::{Engine, EngineError, TenantId};
use locus_protocol::{ProtocolVersion, ReplyWriter};

use crate::config::TenancyMode;
use crate::server::{ConnState, Shared};
pub use effects::Effects;
pub use table::{CommandSpec, Route, has_flag, lookup};

/// A command's arguments (name first).
pub type Args<'a, 'b> = &'a [Cow<'b, [u8]>];

/// Everything a handler may touch.
pub struct Ctx<'a> {
    /// The engine (lock held).
    pub eng: &'a mut Engine,
    /// What a data command does beyond its keys' values: notifications, WATCH, tracking,
    /// blocked clients, encodings, the change count ([`effects`]). The server in `locus serve`.
    pub fx: &'a dyn Effects,
    /// The whole server, for the commands that span tenants or the server (INFO, CONFIG, CLIENT,
    /// SAVE, SHUTDOWN, LOCUS.*, pub/sub, scripting, the dispatcher itself): read through
    /// [`Ctx::shared`]. `None` when the command layer runs without a server (tests).
    pub server: Option<&'a Shared>,
    /// This connection.
    pub conn: &'a mut ConnState,
    /// The reply being built.
    pub w: ReplyWriter<'a>,
    /// The tenant this command acts on (resolved by the dispatcher), if any.
    pub tenant: Option<TenantId>,
}

impl<'a> Ctx<'a> {
    /// The whole server (see [`Ctx::server`]): for commands that span tenants or the server,
    /// never for a data command, which has [`Ctx::fx`].
    ///
    /// # Panics
    /// When the command layer runs without a server (a test running an admin command).
    pub fn shared(&self) -> &'a Shared {
        self.server
            .expect("a server command ran without a server (Ctx::server is None)")
    }

    /// The routed tenant.
    ///
    /// # Errors
    /// [`CmdError::NoTenant`] if the dispatcher resolved none (cannot happen for commands routed
    /// `Keys`/`Conn`, which are refused before reaching the handler).
    pub fn t(&self) -> Result<TenantId, CmdError> {
        self.tenant.ok_or(CmdError::NoTenant)
    }
}

/// A command failure, mapped to Redis's wording by [`CmdError::wire`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CmdError {
    /// Arity error for the named command (lowercase, `parent|sub` for subcommands).
    #[error("ERR wrong number of arguments for '{0}' command")]
    WrongArity(String),
    /// Unparseable options.
    #[error("ERR syntax error")]
    Syntax,
    /// Not an integer (or out of range).
    #[error("ERR value is not an integer or out of range")]
    NotInteger,
    /// Not a float.
    #[error("ERR value is not a valid float")]
    NotFloat,
    /// INCR family overflow.
    #[error("ERR increment or decrement would overflow")]
    Overflow,
    /// The key holds another type.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// RENAME of a missing key.
    #[error("ERR no such key")]
    NoSuchKey,
    /// noeviction and full, or nothing evictable.
    #[error("OOM command not allowed when used memory > 'maxmemory'.")]
    Oom,
    /// An item larger than the engine stores (maxmemory, or 2 GiB).
    #[error(
        "ERR item of {size} bytes is larger than the largest item this server stores ({max} bytes)"
    )]
    ItemTooLarge {
        /// Item bytes.
        size: u64,
        /// Page bytes.
        max: u64,
    },
    /// A string would exceed proto-max-bulk-len.
    #[error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")]
    StringTooLong,
    /// No tenant resolved (internal invariant).
    #[error("ERR no tenant for this command")]
    NoTenant,
    /// Any other error, already worded with its prefix (`ERR ...`, `WRONGPASS ...`).
    #[error("{0}")]
    Msg(String),
    /// An error reply counted in INFO errorstats where it was first written (a script's reply:
    /// see `exec::errorstats`): replied, and counted as the command's failure, not again there.
    #[error("{0}")]
    Counted(String),
}

impl CmdError {
    /// A message error.
    pub fn msg(s: impl Into<String>) -> Self {
        CmdError::Msg(s.into())
    }

    /// The error reply text.
    pub fn wire(&self) -> String {
        self.to_string()
    }

    /// Writes the error reply (counted in INFO errorstats unless it was already).
    pub fn reply(&self, w: &mut ReplyWriter<'_>) {
        match self {
            CmdError::Counted(text) => w.error_uncounted(text),
            e => w.error(&e.wire()),
        }
    }
}

impl From<EngineError> for CmdError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::OutOfMemory => CmdError::Oom,
            EngineError::NoSuchKey => CmdError::NoSuchKey,
            EngineError::WrongType => CmdError::WrongType,
            EngineError::ItemTooLarge { size, max } => CmdError::ItemTooLarge { size, max },
            other => CmdError::Msg(format!("ERR {other}")),
        }
    }
}

/// Result of a handler.
pub type CmdResult = Result<(), CmdError>;

/// Parses an integer exactly as Redis's `string2ll`: optional '-', no '+', no spaces, no leading
/// zeros, at most 20 characters, within i64.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    if b == b"0" {
        return Some(0);
    }
    let (neg, d) = if b[0] == b'-' {
        (true, &b[1..])
    } else {
        (false, b)
    };
    if d.is_empty() || !(b'1'..=b'9').contains(&d[0]) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in d {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// [`parse_i64`] or [`CmdError::NotInteger`].
pub fn int_arg(b: &[u8]) -> Result<i64, CmdError> {
    parse_i64(b).ok_or(CmdError::NotInteger)
}

/// Parses a float as Redis's `string2ld`: no surrounding spaces, no NaN.
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty()
        || s.len() > 5000
        || s.starts_with(char::is_whitespace)
        || s.ends_with(char::is_whitespace)
    {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    if lower.contains("nan")
        || lower.starts_with("0x")
        || lower.starts_with("-0x")
        || lower.starts_with('+') && lower[1..].starts_with("0x")
    {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_nan() { None } else { Some(v) }
}

/// Lowercase text of an argument (for option matching and messages).
pub fn lower(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_ascii_lowercase()
}

/// Case-insensitive comparison of an argument with an ASCII word.
pub fn is(b: &[u8], word: &str) -> bool {
    b.eq_ignore_ascii_case(word.as_bytes())
}

/// Executes one command. Writes exactly one reply (none for SHUTDOWN, which closes).
pub fn dispatch(ctx: &mut Ctx<'_>, args: Args<'_, '_>) {
    dispatch_spec(ctx, args, lookup(&args[0]));
}

/// [`dispatch`] for a caller that already looked the command up (`spec` MUST be
/// `lookup(&args[0])`): the connection loop looks each command up once, for CLIENT LIST's `cmd=`
/// and for execution.
pub fn dispatch_spec(ctx: &mut Ctx<'_>, args: Args<'_, '_>, spec: Option<&'static CommandSpec>) {
    let start = ctx.w.len();
    if let Err(e) = run(ctx, args, spec) {
        ctx.w.truncate(start);
        e.reply(&mut ctx.w);
    }
}

fn unknown_command(args: Args<'_, '_>) -> CmdError {
    let name = String::from_utf8_lossy(&args[0]);
    let name: String = name.chars().take(128).collect();
    let mut rest = String::new();
    for a in &args[1..] {
        if rest.len() >= 128 {
            break;
        }
        let budget = 128 - rest.len();
        let s = String::from_utf8_lossy(a);
        let s: String = s.chars().take(budget).collect();
        rest.push_str(&format!("'{s}' "));
    }
    CmdError::Msg(format!(
        "ERR unknown command '{name}', with args beginning with: {rest}"
    ))
}

fn run(ctx: &mut Ctx<'_>, args: Args<'_, '_>, spec: Option<&'static CommandSpec>) -> CmdResult {
    // Commands run under the engine lock, so nothing else counts calls of `spec` meanwhile.
    let calls = |ctx: &Ctx<'_>, spec: &CommandSpec| {
        ctx.shared()
            .stats()
            .commands
            .of(spec)
            .calls
            .load(Ordering::Relaxed)
    };
    let before = spec.map(|s| calls(ctx, s));
    let r = run_counted(ctx, args, spec);
    if let (Err(_), Some(spec), Some(before)) = (&r, spec, before) {
        let stat = ctx.shared().stats().commands.of(spec);
        // Executed (its call counted) then failed, or refused before executing.
        if calls(ctx, spec) > before {
            stat.failed.fetch_add(1, Ordering::Relaxed);
        } else {
            stat.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }
    r
}

fn run_counted(
    ctx: &mut Ctx<'_>,
    args: Args<'_, '_>,
    spec: Option<&'static CommandSpec>,
) -> CmdResult {
    let r = check_and_route(ctx, args, spec);
    let in_multi = ctx.conn.multi.is_some();
    let spec = match r {
        Ok(spec) => spec,
        Err(e) => {
            // A command rejected while queuing aborts the transaction at EXEC (Redis).
            if in_multi {
                ctx.conn.multi_error = true;
            }
            return Err(e);
        }
    };
    if ctx.conn.proto == ProtocolVersion::Resp2
        && ctx.conn.subscriptions() > 0
        && !pubsub::allowed_when_subscribed(spec.name)
    {
        if in_multi {
            ctx.conn.multi_error = true;
        }
        return Err(CmdError::msg(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            spec.name
        )));
    }
    if in_multi && has_flag(spec.flags, "no_multi") {
        // Redis's processCommand: refused while queuing, and the transaction is aborted.
        ctx.conn.multi_error = true;
        return Err(CmdError::msg(
            "ERR Command not allowed inside a transaction",
        ));
    }
    if in_multi && !transaction::runs_inside_multi(spec.name) {
        return transaction::queue(ctx, args, spec);
    }
    // The dispatcher is the server's: its own bookkeeping reads the server directly (static
    // calls on the hot path); what it does for the handler goes through the same sink calls.
    let srv = ctx.shared();
    // `new` keyspace events: which of a write's keys exist before it (only while asked for).
    let existed: Vec<bool> = match ctx.tenant {
        Some(t) if spec.is_write && srv.notify_flags() & notify::NEW != 0 => {
            key_positions(spec, args.len())
                .map(|k| ctx.eng.exists(t, &args[k]))
                .collect()
        }
        _ => Vec::new(),
    };
    let reply_start = ctx.w.len();
    if ctx.conn.tracking.on {
        tracking::before(ctx, spec);
    }
    // One load for both feeds: a monitor attached while this command runs sees the next one.
    let monitored = monitor::ACTIVE.load(Ordering::Relaxed);
    if monitored {
        monitor::feed(ctx, spec, args, true);
    }
    let began = std::time::Instant::now();
    let ran = (spec.handler)(ctx, args);
    let took = began.elapsed();
    latency::record(ctx, spec, args, took.as_nanos() as u64);
    if monitored {
        monitor::feed(ctx, spec, args, false);
    }
    // A command that left its client waiting is counted when it is served, times out or is
    // unblocked (Redis: one call per blocking command, whatever it took to answer).
    if !ctx.conn.block.waits() {
        srv.stats().commands.of(spec).record(took.as_nanos() as u64);
    }
    slowlog::record(ctx, spec, args, took);
    if srv.notify_flags() != 0 {
        if ran.is_ok() && !existed.is_empty() {
            notify::new_keys(ctx, spec, args, &existed);
        }
        if ran.is_ok()
            && spec.is_write
            && !wrote_nothing(spec.name, args, ctx.w.written_since(reply_start))
        {
            notify::after_write(ctx, spec, args);
        }
        // Keys this command found expired or evicted (reads expire too).
        notify::publish_key_events(srv, ctx.eng);
    } else if srv.tracking().active() {
        // Their invalidations (CLIENT TRACKING).
        notify::publish_key_events(srv, ctx.eng);
    }
    // The keys a tracking client read (after the invalidations of the keys the read found
    // expired, as Redis expires them before it remembers them).
    if ctx.conn.tracking.on {
        tracking::after(ctx, spec, args);
    }
    ran?;
    settle_write(srv, ctx, spec, args, reply_start);
    Ok(())
}

/// The bookkeeping of a command that succeeded, through an effects sink only (`fx`: the server
/// here, statically dispatched; a recorder in tests): the change count, the dumped tenants'
/// keys, the blocked clients of its keys, WATCH and encodings. `reply_start` is where its reply
/// began in `ctx.w`.
pub(crate) fn settle_write<E: Effects + ?Sized>(
    fx: &E,
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    args: Args<'_, '_>,
    reply_start: usize,
) {
    // Redis's `dirty` (rdb_changes_since_last_save, save points): one per write command that
    // changed something; the commands that report their own writes count each change they
    // make (`Shared::key_changed`), so a SETBIT that sets a bit already set counts nothing.
    if spec.is_write && !wrote_nothing(spec.name, args, ctx.w.written_since(reply_start)) {
        fx.note_write();
    }
    if spec.is_write {
        // A dumped tenant's keys written or deleted now must not come back at its load (even
        // a DEL that found nothing, or a write whose reply says it changed nothing: the key
        // may be in the dump file).
        if let Some(t) = ctx.tenant
            && fx.any_dumped()
        {
            let keys: Vec<&[u8]> = key_positions(spec, args.len())
                .map(|k| &args[k][..])
                .collect();
            let flush = spec.name == "flushdb" || spec.name == "flushall";
            fx.note_dumped_write(t, &keys, flush);
        }
    }
    // Clients blocked on a key this write names are served after the command (exec/blocking).
    if spec.is_write
        && let Some(t) = ctx.tenant
        && fx.any_blocked()
    {
        for k in key_positions(spec, args.len()) {
            fx.key_ready(t, &args[k]);
        }
    }
    // WATCH and OBJECT ENCODING bookkeeping, skipped while nobody watches a key and no key has a
    // forced encoding (both counters only change under the engine lock, which is held here).
    // (COPY marks its destination itself: it may be in another tenant.)
    if spec.is_write
        && spec.name != "copy"
        && let Some(t) = ctx.tenant
        && fx.tracks_writes()
        && !wrote_nothing(spec.name, args, ctx.w.written_since(reply_start))
    {
        let keys: Vec<&[u8]> = key_positions(spec, args.len())
            .map(|k| &args[k][..])
            .collect();
        if spec.name == "flushdb" || spec.name == "flushall" {
            // (The flush handler marked the watched keys it removed.)
        } else {
            for k in &keys {
                fx.touch_watched(t, k);
            }
        }
        if spec.name != "incrbyfloat" {
            fx.note_encoding(spec.name, t, &keys);
        }
    }
}

/// Whether a write command's reply says it changed nothing (a failed NX/XX condition, no key
/// deleted, no TTL changed): then, as in Redis, WATCH is not touched and encodings stay.
fn wrote_nothing(name: &str, args: Args<'_, '_>, reply: &[u8]) -> bool {
    let zero = reply == b":0\r\n";
    let null = reply == b"$-1\r\n" || reply == b"_\r\n";
    match name {
        // PFADD and PFMERGE do this bookkeeping themselves (exec/hll): PFMERGE's sources are
        // keys it only reads, and both leave their key a raw string, which this would forget.
        "pfadd" | "pfmerge" => true,
        "setnx" | "msetnx" | "renamenx" | "del" | "unlink" | "expire" | "pexpire" | "expireat"
        | "pexpireat" | "persist" => zero,
        // SET ... GET answers the old value (nil for a new key) whether or not it wrote.
        "set" => null && !args.iter().skip(3).any(|a| is(a, "get")),
        "getdel" => null,
        // Their handlers report their own writes: Redis signals SETBIT and BITFIELD only when a
        // bit changed or the string was created or grew, BITOP with an empty result only when it
        // deleted the destination, none of which the reply tells.
        "setbit" | "bitfield" | "bitop" => true,
        // The list commands report their own (exec/types/list.rs): Redis signals a list only
        // when it changed.
        "lpush" | "rpush" | "lpushx" | "rpushx" | "lpop" | "rpop" | "linsert" | "lset" | "lrem"
        | "ltrim" | "lmove" | "rpoplpush" | "lmpop" | "blpop" | "brpop" | "blmove"
        | "brpoplpush" | "blmpop" => true,
        // The set commands report their own (exec/types/set.rs): Redis signals a set only when
        // it changed.
        "sadd" | "srem" | "spop" | "smove" | "sinterstore" | "sunionstore" | "sdiffstore" => true,
        // So do the sorted-set commands (exec/types/zset.rs).
        "zadd" | "zincrby" | "zrem" | "zremrangebyrank" | "zremrangebyscore" | "zremrangebylex"
        | "zpopmin" | "zpopmax" | "zmpop" | "bzpopmin" | "bzpopmax" | "bzmpop" | "zrangestore"
        | "zunionstore" | "zinterstore" | "zdiffstore" => true,
        // SORT reports its STORE key's (exec/sort.rs); it never writes the key it sorts.
        "sort" => true,
        // GEOADD is ZADD, which reports its own; the geo STORE forms report theirs (exec/geo).
        "geoadd" | "georadius" | "georadiusbymember" | "geosearchstore" => true,
        // So do the stream commands (exec/types/stream): Redis signals a stream only when it
        // changed (XDEL that found nothing, XTRIM that trimmed nothing do not).
        "xadd" | "xdel" | "xtrim" | "xsetid" | "xgroup" | "xreadgroup" | "xack" | "xclaim"
        | "xautoclaim" => true,
        _ => false,
    }
}

fn check_and_route(
    ctx: &mut Ctx<'_>,
    args: Args<'_, '_>,
    spec: Option<&'static CommandSpec>,
) -> Result<&'static CommandSpec, CmdError> {
    let Some(spec) = spec else {
        return Err(unknown_command(args));
    };
    if !ctx.conn.authenticated && !spec.no_auth {
        return Err(CmdError::msg("NOAUTH Authentication required."));
    }
    let argc = args.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || (spec.arity < 0 && argc < -spec.arity) {
        return Err(CmdError::WrongArity(spec.name.to_string()));
    }
    privilege::check_command(ctx, spec, args)?;
    ctx.tenant = route(ctx, spec, args)?;
    privilege::check_route(ctx, ctx.tenant)?;
    Ok(spec)
}

/// Resolves the tenant a command acts on.
pub(crate) fn route(
    ctx: &Ctx<'_>,
    spec: &CommandSpec,
    args: Args<'_, '_>,
) -> Result<Option<TenantId>, CmdError> {
    route_of(ctx.shared(), ctx.conn, spec, args)
}

/// [`route`] for a connection answered without the engine (a script is busy).
pub(crate) fn route_of(
    shared: &Shared,
    conn: &ConnState,
    spec: &CommandSpec,
    args: Args<'_, '_>,
) -> Result<Option<TenantId>, CmdError> {
    let tenancy = &shared.tenancy();
    let conn_tenant = || -> Result<Option<TenantId>, CmdError> {
        match conn.tenant {
            Some(t) => Ok(Some(t)),
            None => Err(match tenancy.mode {
                TenancyMode::User | TenancyMode::Single | TenancyMode::Port => {
                    CmdError::msg("NOAUTH Authentication required.")
                }
                TenancyMode::Db => CmdError::msg(format!("ERR no tenant for DB {}", conn.db)),
                TenancyMode::Prefix => CmdError::msg(
                    "ERR keyless command needs a default tenant in prefix tenancy (set tenancy.default_tenant)",
                ),
            }),
        }
    };
    match spec.route {
        Route::None => Ok(conn.tenant),
        Route::Conn => conn_tenant(),
        Route::Pattern => {
            if tenancy.mode == TenancyMode::Prefix
                && let Some(pat) = pattern_arg(spec, args)
            {
                let lit = crate::glob::literal_prefix(pat);
                if let Some((_, t)) = tenancy.prefixes.iter().find(|(p, _)| lit.starts_with(p)) {
                    return Ok(Some(*t));
                }
            }
            conn_tenant()
        }
        Route::Keys => {
            if tenancy.mode != TenancyMode::Prefix {
                return conn_tenant();
            }
            let mut found: Option<TenantId> = None;
            for k in key_positions(spec, args.len()).chain(counted_keys(spec, args)) {
                let key = &args[k];
                // MIGRATE ... "" ... KEYS k1 k2: the empty key argument names no key.
                if key.is_empty() && spec.name == "migrate" {
                    continue;
                }
                let Some(t) = tenancy.for_key(key) else {
                    return Err(CmdError::msg("ERR key matches no tenant prefix"));
                };
                // A key of another tenant is refused before the span check, whose message
                // names tenants (only the admin gets that far).
                privilege::check_route_of(shared, conn, Some(t))?;
                match found {
                    None => found = Some(t),
                    Some(f) if f != t => {
                        return Err(CmdError::msg(format!(
                            "ERR keys in request span tenants '{}' and '{}'",
                            tenancy.name(f),
                            tenancy.name(t)
                        )));
                    }
                    _ => {}
                }
            }
            // No key (container commands: MEMORY HELP, OBJECT HELP): the connection's tenant,
            // if any; a handler that needs one reports it.
            Ok(found.or(conn.tenant))
        }
    }
}

/// The argument positions holding keys (Redis's first/last/step triple).
pub fn key_positions(spec: &CommandSpec, argc: usize) -> impl Iterator<Item = usize> {
    let first = spec.first_key.max(0) as usize;
    let last = if spec.last_key < 0 {
        argc as i64 + i64::from(spec.last_key)
    } else {
        i64::from(spec.last_key)
    };
    let last = usize::try_from(last)
        .unwrap_or(0)
        .min(argc.saturating_sub(1));
    let step = spec.step.max(1) as usize;
    let range = if first == 0 || first > last {
        1..1
    } else {
        first..last + 1
    };
    range.step_by(step)
}

/// The keys of a command whose keys follow a count (Redis's `movablekeys` commands with a
/// `keynum` key spec, whose first/last/step triple is 0 0 0): their positions, for routing.
pub fn counted_keys(spec: &CommandSpec, args: Args<'_, '_>) -> std::ops::Range<usize> {
    let numkeys_at = match spec.name {
        "lmpop" => 1,
        "blmpop" => 2,
        "sintercard" => 1,
        "zmpop" | "zunion" | "zinter" | "zdiff" | "zintercard" => 1,
        "bzmpop" | "zunionstore" | "zinterstore" | "zdiffstore" => 2,
        // SORT's STORE key (routed and checked like the sorted key).
        "sort" => return sort::store_key_pos(args).map_or(0..0, |p| p..p + 1),
        // GEORADIUS's and GEORADIUSBYMEMBER's STORE / STOREDIST key.
        "georadius" | "georadiusbymember" => {
            return geo::store_key_pos(args).map_or(0..0, |p| p..p + 1);
        }
        "xread" | "xreadgroup" => return types::stream::cmds::read_keys(args),
        "migrate" => return dump::migrate::keys_after_keyword(args),
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => 2,
        _ => return 0..0,
    };
    let n = args
        .get(numkeys_at)
        .and_then(|n| parse_i64(n))
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let first = numkeys_at + 1;
    first..first.saturating_add(n).min(args.len())
}

fn pattern_arg<'x>(spec: &CommandSpec, args: Args<'x, '_>) -> Option<&'x [u8]> {
    if spec.name == "keys" {
        return args.get(1).map(|a| &a[..]);
    }
    // SCAN cursor [MATCH pattern] ...
    let mut i = 2;
    while i + 1 < args.len() {
        if is(&args[i], "match") {
            return Some(&args[i + 1]);
        }
        i += 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_integer_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-0",
            b"+1",
            b"01",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"1a",
            b"-",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn float_rules() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"5e3"), Some(5000.0));
        assert_eq!(parse_f64(b"-.5"), Some(-0.5));
        assert!(parse_f64(b"inf").unwrap().is_infinite());
        for bad in [&b""[..], b" 1", b"nan", b"1x", b"0x10"] {
            assert_eq!(parse_f64(bad), None);
        }
    }
}
