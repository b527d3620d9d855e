//! DUMP and RESTORE in Redis's own serialization (the RDB value encoding of Redis 7.0), so a
//! value moves between redis-server and Locus, either way, with the same bytes on the wire.
//!
//! ```text
//!  DUMP key ─► value (touched as GET) ─► rdb::encode ─► type | value | version 10 | CRC-64
//!  RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]
//!     options ─► BUSYKEY (no REPLACE) ─► ttl ─► rdb::verify (version, CRC) ─► rdb::decode
//!     ─► a TTL already passed: the key is deleted (REPLACE) or not created, reply OK
//!     ─► stored in the caller's tenant like any write (charged, evicting by its policy, OOM
//!        when it cannot fit), then its TTL, then IDLETIME/FREQ as the tenant's policy keeps them
//! ```
//!
//! Files: [`crc64`] (Jones CRC-64), [`lzf`] (RDB string compression), [`pack`] (listpacks,
//! ziplists, intsets, zipmaps), [`rdb`] (values), [`migrate`] (MIGRATE).

pub mod crc64;
pub mod lzf;
pub mod migrate;
pub mod pack;
pub mod rdb;

use locus_engine::{Expire, SetCond, SetOptions};

use super::notify::{GENERIC, notify};
use super::{Args, CmdError, CmdResult, Ctx, int_arg, is};
use rdb::{DecodeError, Decoded};

/// `DUMP key`: the value serialized, or nil when the key does not exist.
pub fn dump(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let Some(v) = ctx.eng.get_value(t, &a[1]) else {
        ctx.w.null();
        return Ok(());
    };
    let payload = rdb::encode(v)
        .ok_or_else(|| CmdError::msg("ERR this key's type has no DUMP serialization"))?;
    ctx.w.bulk(&payload);
    Ok(())
}

/// `RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]`
pub fn restore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut j = 4;
    while j < a.len() {
        let more = j + 1 < a.len();
        if is(&a[j], "replace") {
            replace = true;
        } else if is(&a[j], "absttl") {
            absttl = true;
        } else if is(&a[j], "idletime") && more && freq.is_none() {
            let v = int_arg(&a[j + 1])?;
            if v < 0 {
                return Err(CmdError::msg("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
            j += 1;
        } else if is(&a[j], "freq") && more && idle.is_none() {
            let v = int_arg(&a[j + 1])?;
            if !(0..=255).contains(&v) {
                return Err(CmdError::msg(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            freq = Some(v);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let t = ctx.t()?;
    let key = &a[1][..];
    if !replace && ctx.eng.exists(t, key) {
        return Err(CmdError::msg("BUSYKEY Target key name already exists."));
    }
    let ttl = int_arg(&a[2])?;
    if ttl < 0 {
        return Err(CmdError::msg("ERR Invalid TTL value, must be >= 0"));
    }
    // No value larger than the tenant's whole budget is built: it could not be stored.
    let cfg = ctx.eng.config().maxmemory;
    let limit = ctx
        .eng
        .tenant_config(t)
        .max_bytes
        .map_or(cfg, |m| m.min(cfg));
    let value = match rdb::decode_within(&a[3], limit) {
        Ok(v) => v,
        Err(DecodeError::TooLarge) => return Err(CmdError::Oom),
        Err(DecodeError::Footer) => {
            return Err(CmdError::msg(
                "ERR DUMP payload version or checksum are wrong",
            ));
        }
        Err(DecodeError::Bad(_)) => return Err(CmdError::msg("ERR Bad data format")),
    };
    let now = ctx.eng.now_ms();
    let at = match ttl {
        0 => None,
        _ if absttl => Some(ttl as u64),
        _ => Some(now.saturating_add(ttl as u64)),
    };
    if at.is_some_and(|at| at <= now) {
        // Already expired: as Redis, the key is not created (and REPLACE deletes the old one).
        if replace && ctx.eng.delete(t, key) {
            notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", key);
        }
        ctx.w.ok();
        return Ok(());
    }
    let expire = at.map_or(Expire::Persist, Expire::AtMs);
    match value {
        Decoded::Str(v) => {
            let opts = SetOptions {
                expire,
                cond: SetCond::Always,
            };
            ctx.eng.set(t, key, &v, opts)?;
        }
        Decoded::Obj(o) => {
            ctx.eng.obj_store(t, key, o, false)?;
            if at.is_some() {
                ctx.eng.set_expire(t, key, at);
            }
        }
    }
    if idle.is_some() || freq.is_some() {
        ctx.eng
            .set_recency(t, key, idle.map(|v| v as u64), freq.map(|v| v as u8));
    }
    notify(ctx.fx, t, ctx.conn.db, GENERIC, "restore", key);
    ctx.w.ok();
    Ok(())
}

#[cfg(test)]
mod tests;
