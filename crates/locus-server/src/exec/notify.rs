//! Keyspace notifications (Redis's `notify-keyspace-events`): after a write, `__keyspace@<db>__:<key>`
//! gets the event name and `__keyevent@<db>__:<event>` gets the key, on the pub/sub channels of
//! the key's tenant only. Expired and evicted keys come from the engine's key-event record
//! (turned on only while `x` or `e` is asked for), published after the command that caused them
//! and after each active-expiry tick.

use std::sync::atomic::Ordering;

use locus_engine::{Engine, KeyEventKind, TenantId};

use super::effects::Effects;
use super::{Args, CommandSpec, Ctx, is, key_positions};
use crate::server::Shared;

/// `K`: `__keyspace@<db>__` channels.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: `__keyevent@<db>__` channels.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted-set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: expired keys.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: evicted keys.
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: key misses (Locus sends none yet).
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module key types.
pub const MODULE: u32 = 1 << 12;
/// `n`: new keys (a write that creates a key).
pub const NEW: u32 = 1 << 13;
/// `A`: every class but `m` and `n`.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Parses Redis's flag string; `None` when a character is not a flag.
pub fn parse_flags(s: &[u8]) -> Option<u32> {
    let mut f = 0;
    for &c in s {
        f |= match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'd' => MODULE,
            b'n' => NEW,
            _ => return None,
        };
    }
    Some(f)
}

/// The canonical flag string CONFIG GET shows (`A` for all the classes, then `K`, `E`, `m`).
pub fn format_flags(f: u32) -> String {
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// Publishes one event of `class` for `key` of tenant `t` (database `db`), if the flags ask for
/// it (a handler's call: through its effects sink).
#[inline]
pub fn notify(fx: &dyn Effects, t: TenantId, db: u32, class: u32, event: &str, key: &[u8]) {
    fx.notify(t, db, class, event, key);
}

/// [`notify`] on the server: the event goes to `t`'s pub/sub channels.
pub fn publish(shared: &Shared, t: TenantId, db: u32, class: u32, event: &str, key: &[u8]) {
    let flags = shared.notify_flags();
    if flags & class == 0 || flags & (KEYSPACE | KEYEVENT) == 0 {
        return;
    }
    let hard = shared.pubsub_hard_limit();
    let reg = shared.pubsub();
    let mut dropped = 0;
    if flags & KEYSPACE != 0 {
        let mut ch = format!("__keyspace@{db}__:").into_bytes();
        ch.extend_from_slice(key);
        dropped += reg.publish(t, &ch, event.as_bytes(), hard).1;
    }
    if flags & KEYEVENT != 0 {
        let ch = format!("__keyevent@{db}__:{event}").into_bytes();
        dropped += reg.publish(t, &ch, key, hard).1;
    }
    if dropped > 0 {
        shared
            .stats()
            .output_limit_disconnections
            .fetch_add(dropped, Ordering::Relaxed);
    }
}

/// The database number a tenant's events name: its own in `db` tenancy, else 0.
fn db_of(shared: &Shared, t: TenantId) -> u32 {
    shared
        .tenancy()
        .dbs
        .iter()
        .find(|(_, tt)| **tt == t)
        .map_or(0, |(db, _)| *db)
}

/// Publishes the expired and evicted keys the engine recorded (and invalidates them for the
/// clients that track them).
pub fn publish_key_events(shared: &Shared, eng: &mut Engine) {
    for ev in eng.take_key_events() {
        // An evicted key's invalidation precedes the running command's reply (server/tracking).
        match ev.kind {
            KeyEventKind::Expired => shared
                .tracking()
                .invalidate(shared, ev.tenant, &ev.key, false),
            KeyEventKind::Evicted => shared.tracking().evicted(shared, ev.tenant, &ev.key),
        }
        let (class, name) = match ev.kind {
            KeyEventKind::Expired => (EXPIRED, "expired"),
            KeyEventKind::Evicted => (EVICTED, "evicted"),
        };
        publish(
            shared,
            ev.tenant,
            db_of(shared, ev.tenant),
            class,
            name,
            &ev.key,
        );
    }
}

/// The events of a write command that changed something (the dispatcher calls it after the
/// handler; DEL, UNLINK and COPY notify from their handlers, which know which keys changed).
pub fn after_write(ctx: &mut Ctx<'_>, spec: &CommandSpec, a: Args<'_, '_>) {
    let Some(t) = ctx.tenant else {
        return;
    };
    let db = ctx.conn.db;
    let keys = || key_positions(spec, a.len()).map(|k| &a[k][..]);
    let each = |class: u32, event: &str| {
        for k in keys() {
            notify(ctx.fx, t, db, class, event, k);
        }
    };
    let has = |word: &str| a.iter().skip(2).any(|x| is(x, word));
    match spec.name {
        "set" | "setnx" | "setex" | "psetex" | "getset" | "mset" | "msetnx" => {
            each(STRING, "set");
            if matches!(spec.name, "setex" | "psetex")
                || ["ex", "px", "exat", "pxat"].iter().any(|w| has(w))
            {
                each(GENERIC, "expire");
            }
        }
        "append" => each(STRING, "append"),
        "setrange" => each(STRING, "setrange"),
        "incr" | "decr" | "incrby" | "decrby" => each(STRING, "incrby"),
        "incrbyfloat" => each(STRING, "incrbyfloat"),
        "getdel" => each(GENERIC, "del"),
        "persist" => each(GENERIC, "persist"),
        "getex" => {
            if has("persist") {
                each(GENERIC, "persist");
            } else if ["ex", "px", "exat", "pxat"].iter().any(|w| has(w)) {
                each(GENERIC, "expire");
            }
        }
        "expire" | "pexpire" | "expireat" | "pexpireat" => {
            // A time in the past deletes the key: Redis sends `del` then.
            let gone = ctx.eng.expire_at(t, &a[1]).is_none();
            notify(
                ctx.fx,
                t,
                db,
                GENERIC,
                if gone { "del" } else { "expire" },
                &a[1],
            );
        }
        "rename" | "renamenx" => {
            notify(ctx.fx, t, db, GENERIC, "rename_from", &a[1]);
            notify(ctx.fx, t, db, GENERIC, "rename_to", &a[2]);
        }
        _ => {}
    }
}

/// `new` events: each key of the write that did not exist before it (`existed`, by key position)
/// and does now.
pub fn new_keys(ctx: &mut Ctx<'_>, spec: &CommandSpec, a: Args<'_, '_>, existed: &[bool]) {
    let Some(t) = ctx.tenant else {
        return;
    };
    for (k, &before) in key_positions(spec, a.len()).zip(existed) {
        if !before && ctx.eng.exists(t, &a[k]) {
            notify(ctx.fx, t, ctx.conn.db, NEW, "new", &a[k]);
        }
    }
}
