//! Keyspace commands: DEL UNLINK EXISTS TYPE KEYS SCAN RANDOMKEY RENAME RENAMENX COPY DBSIZE
//! FLUSHDB FLUSHALL. All act on one tenant only (the routed one; COPY ... DB on one the caller
//! may select).

use locus_engine::{Expire, SetCond, SetOptions, ValueRef};

use super::notify::{GENERIC, notify};
use super::{Args, CmdError, CmdResult, Ctx, int_arg, is};
use crate::glob::glob_match;

/// `DEL / UNLINK key [key ...]` (UNLINK, and DEL under `lazyfree-lazy-user-del`, free big
/// objects in the background: exec/lazyfree)
pub fn del(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let lazy = is(&a[0], "unlink") || super::lazyfree::user_del();
    let mut n = 0;
    for k in &a[1..] {
        let found = if lazy {
            super::lazyfree::unlink(ctx.eng, t, k)
        } else {
            ctx.eng.delete(t, k)
        };
        if found {
            n += 1;
            notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", k);
        }
    }
    ctx.w.integer(n);
    Ok(())
}

/// `EXISTS key [key ...] (a key named twice counts twice)`
pub fn exists(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n = a[1..].iter().filter(|k| ctx.eng.exists(t, k)).count();
    ctx.w.integer(n as i64);
    Ok(())
}

/// `TOUCH key [key ...]`: counts existing keys and refreshes their access time.
pub fn touch(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n = a[1..]
        .iter()
        .filter(|k| ctx.eng.get(t, k).is_some())
        .count();
    ctx.w.integer(n as i64);
    Ok(())
}

/// TYPE key
pub fn type_(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let ty = ctx.eng.key_type(t, &a[1]).unwrap_or("none");
    ctx.w.simple(ty);
    Ok(())
}

/// KEYS pattern
pub fn keys(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let pat = &a[1][..];
    let all = pat == b"*";
    let mut batch = Vec::new();
    let mut found = Vec::new();
    let mut cursor = 0;
    loop {
        batch.clear();
        cursor = ctx.eng.scan(t, cursor, 1024, &mut batch);
        found.extend(batch.drain(..).filter(|k| all || glob_match(pat, k, false)));
        if cursor == 0 {
            break;
        }
    }
    ctx.w.array(found.len());
    for k in &found {
        ctx.w.bulk(k);
    }
    Ok(())
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`
pub fn scan(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let cursor = super::types::hash::parse_cursor(&a[1])?;
    let mut pat: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut want_type: Option<String> = None;
    let mut i = 2;
    while i < a.len() {
        let Some(v) = a.get(i + 1) else {
            return Err(CmdError::Syntax);
        };
        if is(&a[i], "match") {
            pat = Some(v);
        } else if is(&a[i], "count") {
            let c = int_arg(v)?;
            if c < 1 {
                return Err(CmdError::Syntax);
            }
            count = usize::try_from(c).unwrap_or(usize::MAX).min(1 << 20);
        } else if is(&a[i], "type") {
            want_type = Some(String::from_utf8_lossy(v).to_ascii_lowercase());
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let mut keys = Vec::new();
    let next = ctx.eng.scan(t, cursor, count, &mut keys);
    if let Some(p) = pat
        && p != b"*"
    {
        keys.retain(|k| glob_match(p, k, false));
    }
    if let Some(ty) = want_type {
        keys.retain(|k| ctx.eng.key_type(t, k) == Some(ty.as_str()));
    }
    ctx.w.array(2);
    let mut b = itoa::Buffer::new();
    ctx.w.bulk(b.format(next).as_bytes());
    ctx.w.array(keys.len());
    for k in &keys {
        ctx.w.bulk(k);
    }
    Ok(())
}

/// RANDOMKEY
pub fn randomkey(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    match ctx.eng.random_key(t) {
        Some(k) => ctx.w.bulk(&k),
        None => ctx.w.null(),
    }
    Ok(())
}

/// RENAME key newkey
pub fn rename(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    ctx.eng.rename(t, &a[1], &a[2], false)?;
    ctx.w.ok();
    Ok(())
}

/// RENAMENX key newkey
pub fn renamenx(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let done = ctx.eng.rename(t, &a[1], &a[2], true)?;
    ctx.w.integer(i64::from(done));
    Ok(())
}

/// DBSIZE
pub fn dbsize(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    ctx.w.integer(ctx.eng.len(t) as i64);
    Ok(())
}

/// `FLUSHDB / FLUSHALL [ASYNC|SYNC]`: the caller's tenant only.
pub fn flush(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() > 2 || (a.len() == 2 && !is(&a[1], "async") && !is(&a[1], "sync")) {
        return Err(CmdError::Syntax);
    }
    let t = ctx.t()?;
    if ctx.fx.tracks_writes() {
        let eng = &mut *ctx.eng;
        ctx.fx.touch_all_watched(t, &mut |k| eng.exists(t, k));
    }
    let asynchronous = match a.get(1) {
        Some(mode) => is(mode, "async"),
        None => super::lazyfree::user_flush(),
    };
    if asynchronous {
        super::lazyfree::flush_async(ctx.eng, t);
    } else {
        ctx.eng.flush(t);
    }
    ctx.fx.tenant_ready(t);
    ctx.w.ok();
    Ok(())
}

/// `COPY source destination [DB destination-db] [REPLACE]`: the value and its TTL, into the
/// caller's tenant or (in `db` tenancy) a database the caller may use. 1 when copied, 0 when the
/// source is missing or the destination exists without REPLACE.
pub fn copy(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (mut replace, mut db) = (false, None);
    let mut i = 3;
    while i < a.len() {
        if is(&a[i], "replace") {
            replace = true;
        } else if is(&a[i], "db") && i + 1 < a.len() {
            db = Some(int_arg(&a[i + 1])?);
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    let t = ctx.t()?;
    let dt = match db {
        Some(n) => super::connection::db_tenant(ctx, n)?.unwrap_or(t),
        None => t,
    };
    if dt == t && a[1] == a[2] {
        return Err(CmdError::msg(
            "ERR source and destination objects are the same",
        ));
    }
    let value = match ctx.eng.get_value(t, &a[1]) {
        None => {
            ctx.w.integer(0);
            return Ok(());
        }
        Some(ValueRef::Str(v)) => Ok(v.to_vec()),
        Some(ValueRef::Obj(o)) => Err(o.clone_object()),
    };
    let at = ctx.eng.expire_at(t, &a[1]).flatten();
    let expire = match at {
        Some(at) => Expire::AtMs(at),
        None => Expire::Persist,
    };
    let cond = if replace {
        SetCond::Always
    } else {
        SetCond::IfAbsent
    };
    let done = match value {
        Ok(value) => ctx
            .eng
            .set(dt, &a[2], &value, SetOptions { expire, cond })?,
        Err(obj) => {
            if !replace && ctx.eng.exists(dt, &a[2]) {
                false
            } else {
                ctx.eng.obj_store(dt, &a[2], obj, false)?;
                if let Some(at) = at {
                    ctx.eng.set_expire(dt, &a[2], Some(at));
                }
                true
            }
        }
    };
    if done {
        ctx.fx.touch_watched(dt, &a[2]);
        // (A destination in another tenant: the dispatcher signals the source tenant's keys.)
        ctx.fx.key_ready(dt, &a[2]);
        let db = if dt == t {
            ctx.conn.db
        } else {
            db.unwrap_or(0) as u32
        };
        notify(ctx.fx, dt, db, GENERIC, "copy_to", &a[2]);
    }
    ctx.w.integer(i64::from(done));
    Ok(())
}
