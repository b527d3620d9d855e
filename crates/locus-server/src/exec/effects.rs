//! What a data command does beyond its own keys' values: the effects sink.
//!
//! A data command (strings, bitmaps, HyperLogLogs, hashes, lists, sets, sorted sets, streams,
//! geo, SORT, the keyspace commands) changes its tenant's keys in the engine, and then has to
//! tell the rest of the server: keyspace notifications, WATCH (EXEC of a client watching the key
//! fails), client-side caching (trackers of the key get an invalidation), the encoding OBJECT
//! ENCODING reports, the clients blocked on the key (BLPOP and friends), the snapshots' count of
//! changes, pRedis's dumped tenants. [`Effects`] is that list, and nothing more: a handler gets it
//! as `ctx.fx` and never the server (`Ctx::shared()`, for the commands that span tenants or the
//! server: INFO, CONFIG, CLIENT, SAVE, SHUTDOWN, LOCUS.*, pub/sub, scripting...).
//!
//! ```text
//!  handler ──ctx.eng──► the tenant's keys
//!     │
//!     └──ctx.fx──► Effects ─┬─ server::Shared (locus serve): pub/sub, WATCH table, tracking,
//!                           │   blocked clients' registry, snapshots, dump/load, config
//!                           └─ Recorder (tests): a list of what was asked, no server at all
//! ```
//!
//! Every call names the tenant it acts for, and acts on that tenant only: there is no call that
//! reaches every tenant (FLUSHALL's admin form, CLIENT KILL, INFO stay on `Shared`). The tenant
//! is the command's routed one, except COPY ... DB n, whose destination (another tenant in db
//! tenancy) the dispatcher's privilege check allowed before the handler ran.
//!
//! The dispatch is one `&dyn Effects` call per effect: the writes that report effects report a
//! few per command, and each implementation returns at once when nobody asked (no notification
//! flags, no watched key, no blocked client), as the direct calls did (BENCHMARKS.md has the
//! server CPU per request before and after).

use locus_engine::TenantId;
use parking_lot::Mutex;

use super::blocking::Entry;

/// Everything a data command's handler may do outside its tenant's keys.
pub trait Effects: Sync {
    /// The keyspace notification flags in force (`exec::notify` bits; 0 = none asked for).
    fn notify_flags(&self) -> u32;

    /// Publishes one keyspace event of `class` (`exec::notify` bits) named `event` for `key` of
    /// tenant `t` (database `db`), on `t`'s channels, if the flags ask for it.
    fn notify(&self, t: TenantId, db: u32, class: u32, event: &str, key: &[u8]);

    /// A command that reports its own writes changed `key` of `t`: one change counted for the
    /// snapshots, its watchers' EXEC fails, its trackers get an invalidation.
    fn key_changed(&self, t: TenantId, key: &[u8]);

    /// Watchers and trackers of `key` of `t` only (the change itself is counted elsewhere).
    fn touch_watched(&self, t: TenantId, key: &[u8]);

    /// FLUSHDB emptied `t`: every watched key of `t` that `exists` says it removed is touched,
    /// and `t`'s tracking table is emptied.
    fn touch_all_watched(&self, t: TenantId, exists: &mut dyn FnMut(&[u8]) -> bool);

    /// Whether writes must report the keys they touch ([`Effects::touch_watched`],
    /// [`Effects::note_encoding`]): some key is watched, tracked or has a noted encoding.
    fn tracks_writes(&self) -> bool;

    /// How the write `cmd` leaves the encoding OBJECT ENCODING reports for `keys` of `t`
    /// (`"raw"` / `"embstr"` force one; any other write forgets a forced one).
    fn note_encoding(&self, cmd: &str, t: TenantId, keys: &[&[u8]]);

    /// Whether any client waits for a key (cheap: lets a writer skip [`Effects::key_ready`]).
    fn any_blocked(&self) -> bool;

    /// A write changed `key` of `t`: clients blocked on it are served after the command.
    fn key_ready(&self, t: TenantId, key: &[u8]);

    /// FLUSHDB emptied `t`: every key its blocked clients wait for is served after the command.
    fn tenant_ready(&self, t: TenantId);

    /// A blocking command found nothing: its client waits (`entry` names its tenant and keys).
    fn block(&self, entry: Entry);

    /// One write command changed something (the snapshots' change count, save points).
    fn note_write(&self);

    /// Whether some tenant is dumped to disk (cheap: lets a writer skip
    /// [`Effects::note_dumped_write`]).
    fn any_dumped(&self) -> bool;

    /// `keys` of `t` were written or deleted (all of them if `flush`): if `t` is dumped to disk
    /// (pRedis's dump/load), they must not come back at its load.
    fn note_dumped_write(&self, t: TenantId, keys: &[&[u8]], flush: bool);

    /// `proto-max-bulk-len`: the longest string a command may build.
    fn proto_max_bulk_len(&self) -> u64;

    /// Whether `key` is one of `t`'s keys (prefix tenancy: a key under another tenant's prefix
    /// is not; other tenancies: every key of a routed command is). SORT's BY and GET patterns.
    fn owns_key(&self, t: TenantId, key: &[u8]) -> bool;
}

/// One effect a [`Recorder`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// [`Effects::notify`] (recorded whatever the flags).
    Notify {
        /// Tenant.
        t: TenantId,
        /// Database.
        db: u32,
        /// Class bit.
        class: u32,
        /// Event name.
        event: String,
        /// Key.
        key: Vec<u8>,
    },
    /// [`Effects::key_changed`].
    Changed(TenantId, Vec<u8>),
    /// [`Effects::touch_watched`].
    Touched(TenantId, Vec<u8>),
    /// [`Effects::touch_all_watched`].
    TouchedAll(TenantId),
    /// [`Effects::note_encoding`].
    Encoding(String, TenantId, Vec<Vec<u8>>),
    /// [`Effects::key_ready`].
    Ready(TenantId, Vec<u8>),
    /// [`Effects::tenant_ready`].
    TenantReady(TenantId),
    /// [`Effects::block`]: the tenant and the keys waited for.
    Blocked(TenantId, Vec<Vec<u8>>),
    /// [`Effects::note_write`].
    Write,
    /// [`Effects::note_dumped_write`].
    DumpedWrite(TenantId, Vec<Vec<u8>>, bool),
}

/// An [`Effects`] that records every call, for tests of the command layer without a server. It
/// answers as a server would where every key is watched and blocked on (so writers report every
/// key they touch) and no tenant is dumped, with the notification flags it was made with.
#[derive(Debug, Default)]
pub struct Recorder {
    flags: u32,
    max_bulk: u64,
    log: Mutex<Vec<Effect>>,
}

impl Recorder {
    /// A recorder answering `flags` for the notification flags and Redis's default 512 MB for
    /// `proto-max-bulk-len`.
    pub fn new(flags: u32) -> Self {
        Self {
            flags,
            max_bulk: 512 << 20,
            log: Mutex::new(Vec::new()),
        }
    }

    /// The effects recorded since the last call, in order.
    pub fn take(&self) -> Vec<Effect> {
        std::mem::take(&mut *self.log.lock())
    }

    fn push(&self, e: Effect) {
        self.log.lock().push(e);
    }
}

impl Effects for Recorder {
    fn notify_flags(&self) -> u32 {
        self.flags
    }

    fn notify(&self, t: TenantId, db: u32, class: u32, event: &str, key: &[u8]) {
        self.push(Effect::Notify {
            t,
            db,
            class,
            event: event.to_string(),
            key: key.to_vec(),
        });
    }

    fn key_changed(&self, t: TenantId, key: &[u8]) {
        self.push(Effect::Changed(t, key.to_vec()));
    }

    fn touch_watched(&self, t: TenantId, key: &[u8]) {
        self.push(Effect::Touched(t, key.to_vec()));
    }

    fn touch_all_watched(&self, t: TenantId, _exists: &mut dyn FnMut(&[u8]) -> bool) {
        self.push(Effect::TouchedAll(t));
    }

    fn tracks_writes(&self) -> bool {
        true
    }

    fn note_encoding(&self, cmd: &str, t: TenantId, keys: &[&[u8]]) {
        self.push(Effect::Encoding(
            cmd.to_string(),
            t,
            keys.iter().map(|k| k.to_vec()).collect(),
        ));
    }

    fn any_blocked(&self) -> bool {
        true
    }

    fn key_ready(&self, t: TenantId, key: &[u8]) {
        self.push(Effect::Ready(t, key.to_vec()));
    }

    fn tenant_ready(&self, t: TenantId) {
        self.push(Effect::TenantReady(t));
    }

    fn block(&self, entry: Entry) {
        self.push(Effect::Blocked(entry.tenant(), entry.keys().to_vec()));
    }

    fn note_write(&self) {
        self.push(Effect::Write);
    }

    fn any_dumped(&self) -> bool {
        false
    }

    fn note_dumped_write(&self, t: TenantId, keys: &[&[u8]], flush: bool) {
        self.push(Effect::DumpedWrite(
            t,
            keys.iter().map(|k| k.to_vec()).collect(),
            flush,
        ));
    }

    fn proto_max_bulk_len(&self) -> u64 {
        self.max_bulk
    }

    fn owns_key(&self, _t: TenantId, _key: &[u8]) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    //! The command layer without a server: data commands run against an [`Engine`] with a
    //! [`Recorder`] for their effects and `server: None` (a handler that reached for the server
    //! would panic here).

    use std::borrow::Cow;
    use std::sync::Arc;

    use locus_common::VirtualClock;
    use locus_engine::{Engine, EngineConfig, KeyEventKind, TenantConfig, TenantId};
    use locus_protocol::{ProtocolVersion, ReplyWriter};

    use super::super::notify::{ALL, GENERIC, KEYSPACE, LIST, STRING};
    use super::super::{Ctx, lookup, notify, settle_write, wrote_nothing};
    use super::{Effect, Effects, Recorder};
    use crate::server::ConnState;

    struct Bench {
        eng: Engine,
        clock: Arc<VirtualClock>,
        fx: Recorder,
        a: TenantId,
        b: TenantId,
    }

    fn bench() -> Bench {
        let clock = Arc::new(VirtualClock::new(1_000));
        let mut eng = Engine::new(EngineConfig::default(), clock.clone()).unwrap();
        let a = eng.add_tenant(TenantConfig::new("a")).unwrap();
        let b = eng.add_tenant(TenantConfig::new("b")).unwrap();
        Bench {
            eng,
            clock,
            fx: Recorder::new(KEYSPACE | ALL),
            a,
            b,
        }
    }

    /// Runs one command as the dispatcher does around a data handler: the handler, the write's
    /// keyspace events, then the bookkeeping of a command that succeeded. The reply.
    fn run(bn: &mut Bench, conn: &mut ConnState, words: &[&str]) -> String {
        let args: Vec<Cow<'_, [u8]>> = words.iter().map(|w| Cow::Borrowed(w.as_bytes())).collect();
        let spec = lookup(&args[0]).expect("a command of the table");
        let mut out = Vec::new();
        let mut ctx = Ctx {
            eng: &mut bn.eng,
            fx: &bn.fx,
            server: None,
            tenant: conn.tenant,
            conn,
            w: ReplyWriter::new(&mut out, ProtocolVersion::Resp2),
        };
        let ran = (spec.handler)(&mut ctx, &args);
        if ran.is_ok()
            && spec.is_write
            && ctx.fx.notify_flags() != 0
            && !wrote_nothing(spec.name, &args, ctx.w.written_since(0))
        {
            notify::after_write(&mut ctx, spec, &args);
        }
        match ran {
            Ok(()) => settle_write(ctx.fx, &mut ctx, spec, &args, 0),
            Err(e) => {
                ctx.w.truncate(0);
                ctx.w.error(&e.wire());
            }
        }
        String::from_utf8(out).unwrap()
    }

    fn note(t: TenantId, class: u32, event: &str, key: &str) -> Effect {
        Effect::Notify {
            t,
            db: 0,
            class,
            event: event.to_string(),
            key: key.as_bytes().to_vec(),
        }
    }

    fn k(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn set_over_a_watched_key_touches_its_watchers_in_its_own_tenant() {
        let mut bn = bench();
        let a = bn.a;
        let mut conn = ConnState::detached(1, a);
        assert_eq!(run(&mut bn, &mut conn, &["SET", "k", "v"]), "+OK\r\n");
        assert_eq!(
            bn.fx.take(),
            vec![
                note(a, STRING, "set", "k"),
                Effect::Write,
                Effect::Ready(a, k("k")),
                Effect::Touched(a, k("k")),
                Effect::Encoding("set".into(), a, vec![k("k")]),
            ]
        );
        // SET ... NX that does not write: no change, no watcher touched (Redis).
        assert_eq!(run(&mut bn, &mut conn, &["SET", "k", "w", "NX"]), "$-1\r\n");
        assert_eq!(bn.fx.take(), vec![Effect::Ready(a, k("k"))]);
        // A read has no effect at all.
        assert_eq!(run(&mut bn, &mut conn, &["GET", "k"]), "$1\r\nv\r\n");
        assert_eq!(bn.fx.take(), vec![]);
        // The other tenant's write names only that tenant.
        let mut other = ConnState::detached(2, bn.b);
        assert_eq!(run(&mut bn, &mut other, &["SET", "k", "x"]), "+OK\r\n");
        let seen = bn.fx.take();
        assert!(!seen.is_empty());
        for e in &seen {
            assert!(
                !matches!(e, Effect::Notify { t, .. } | Effect::Touched(t, _) | Effect::Ready(t, _) | Effect::Encoding(_, t, _) if *t == a),
                "{e:?}"
            );
        }
    }

    #[test]
    fn lpush_wakes_the_client_blocked_on_its_list() {
        let mut bn = bench();
        let a = bn.a;
        let mut waiter = ConnState::detached(1, a);
        // BLPOP on an empty list: no reply, the client waits (registered through the sink).
        // (BLPOP is a write: the dispatcher marks its key ready as for any write; serving
        // then finds the list still empty and the client keeps its place.)
        assert_eq!(run(&mut bn, &mut waiter, &["BLPOP", "q", "0"]), "");
        assert_eq!(
            bn.fx.take(),
            vec![Effect::Blocked(a, vec![k("q")]), Effect::Ready(a, k("q"))]
        );
        assert!(waiter.block.waiting.is_some());
        let mut pusher = ConnState::detached(2, a);
        assert_eq!(run(&mut bn, &mut pusher, &["LPUSH", "q", "x"]), ":1\r\n");
        let seen = bn.fx.take();
        // The list reports its own change (snapshot count, watchers) and its event; the
        // dispatcher's bookkeeping marks the key ready for its waiter.
        assert_eq!(
            seen,
            vec![
                Effect::Changed(a, k("q")),
                note(a, LIST, "lpush", "q"),
                Effect::Ready(a, k("q")),
            ]
        );
    }

    #[test]
    fn an_expiring_key_announces_its_expiry_and_goes() {
        let mut bn = bench();
        let a = bn.a;
        let mut conn = ConnState::detached(1, a);
        bn.eng.record_key_events(true);
        assert_eq!(
            run(&mut bn, &mut conn, &["SET", "t", "v", "PX", "100"]),
            "+OK\r\n"
        );
        let seen = bn.fx.take();
        assert_eq!(
            &seen[..2],
            &[note(a, STRING, "set", "t"), note(a, GENERIC, "expire", "t")]
        );
        // A time in the past deletes the key: `del`, as Redis.
        assert_eq!(run(&mut bn, &mut conn, &["SET", "u", "v"]), "+OK\r\n");
        bn.fx.take();
        assert_eq!(run(&mut bn, &mut conn, &["PEXPIREAT", "u", "1"]), ":1\r\n");
        assert_eq!(bn.fx.take()[0], note(a, GENERIC, "del", "u"));
        // Past its deadline the key is gone for a read, and the engine records the expiry for
        // the server to publish (`notify::publish_key_events`, not a handler's effect).
        bn.clock.advance_ms(200);
        assert_eq!(run(&mut bn, &mut conn, &["GET", "t"]), "$-1\r\n");
        assert_eq!(bn.fx.take(), vec![]);
        let events = bn.eng.take_key_events();
        assert!(
            events
                .iter()
                .any(|e| e.kind == KeyEventKind::Expired && e.tenant == a && e.key == b"t"),
            "{events:?}"
        );
    }

    #[test]
    fn flushdb_names_only_its_tenant() {
        let mut bn = bench();
        let b = bn.b;
        let mut conn = ConnState::detached(1, b);
        run(&mut bn, &mut conn, &["SET", "k", "v"]);
        bn.fx.take();
        assert_eq!(run(&mut bn, &mut conn, &["FLUSHDB"]), "+OK\r\n");
        assert_eq!(
            bn.fx.take(),
            vec![
                Effect::TouchedAll(b),
                Effect::TenantReady(b),
                Effect::Write,
                Effect::Encoding("flushdb".into(), b, vec![]),
            ]
        );
    }

    #[test]
    fn the_recorder_is_an_effects_sink() {
        let r = Recorder::new(0);
        let fx: &dyn Effects = &r;
        assert_eq!(fx.notify_flags(), 0);
        fx.key_changed(TenantId(3), b"x");
        assert_eq!(r.take(), vec![Effect::Changed(TenantId(3), k("x"))]);
    }
}
