//! Expiry commands: EXPIRE PEXPIRE EXPIREAT PEXPIREAT (with NX XX GT LT) EXPIRETIME PEXPIRETIME
//! TTL PTTL PERSIST. Times come from the engine's clock, so tests can drive a virtual clock.

use super::{Args, CmdError, CmdResult, Ctx, int_arg, is};

#[derive(Clone, Copy)]
enum Base {
    Relative,
    Absolute,
}

fn expire_generic(
    ctx: &mut Ctx<'_>,
    a: Args<'_, '_>,
    base: Base,
    ms_unit: bool,
    name: &str,
) -> CmdResult {
    let t = ctx.t()?;
    let when = int_arg(&a[2])?;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for o in &a[3..] {
        if is(o, "nx") {
            nx = true;
        } else if is(o, "xx") {
            xx = true;
        } else if is(o, "gt") {
            gt = true;
        } else if is(o, "lt") {
            lt = true;
        } else {
            return Err(CmdError::msg(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(o)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(CmdError::msg(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(CmdError::msg(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let invalid = || CmdError::msg(format!("ERR invalid expire time in '{name}' command"));
    let now = ctx.eng.now_ms() as i64;
    let mut when_ms = if ms_unit {
        when
    } else {
        when.checked_mul(1000).ok_or_else(invalid)?
    };
    if let Base::Relative = base {
        when_ms = when_ms.checked_add(now).ok_or_else(invalid)?;
    }
    let Some(current) = ctx.eng.expire_at(t, &a[1]) else {
        ctx.w.integer(0);
        return Ok(());
    };
    let ok = match current {
        None => !(xx || gt),
        Some(cur) => {
            let cur = cur as i64;
            let blocked_gt = gt && when_ms <= cur;
            let blocked_lt = lt && when_ms >= cur;
            !(nx || blocked_gt || blocked_lt)
        }
    };
    if !ok {
        ctx.w.integer(0);
        return Ok(());
    }
    if when_ms <= now {
        ctx.eng.delete(t, &a[1]);
    } else {
        ctx.eng.set_expire(t, &a[1], Some(when_ms as u64));
    }
    ctx.w.integer(1);
    Ok(())
}

/// `EXPIRE key seconds [NX|XX|GT|LT]`
pub fn expire(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    expire_generic(ctx, a, Base::Relative, false, "expire")
}

/// `PEXPIRE key ms [NX|XX|GT|LT]`
pub fn pexpire(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    expire_generic(ctx, a, Base::Relative, true, "pexpire")
}

/// `EXPIREAT key unix-seconds [NX|XX|GT|LT]`
pub fn expireat(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    expire_generic(ctx, a, Base::Absolute, false, "expireat")
}

/// `PEXPIREAT key unix-ms [NX|XX|GT|LT]`
pub fn pexpireat(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    expire_generic(ctx, a, Base::Absolute, true, "pexpireat")
}

fn ttl_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, ms: bool, absolute: bool) -> CmdResult {
    let t = ctx.t()?;
    let now = ctx.eng.now_ms() as i64;
    let v = match ctx.eng.expire_at(t, &a[1]) {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let at = at as i64;
            let x = if absolute { at } else { (at - now).max(0) };
            if ms { x } else { (x + 500) / 1000 }
        }
    };
    ctx.w.integer(v);
    Ok(())
}

/// TTL key
pub fn ttl(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    ttl_generic(ctx, a, false, false)
}

/// PTTL key
pub fn pttl(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    ttl_generic(ctx, a, true, false)
}

/// EXPIRETIME key
pub fn expiretime(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    ttl_generic(ctx, a, false, true)
}

/// PEXPIRETIME key
pub fn pexpiretime(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    ttl_generic(ctx, a, true, true)
}

/// PERSIST key
pub fn persist(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let had = matches!(ctx.eng.expire_at(t, &a[1]), Some(Some(_)));
    if had {
        ctx.eng.set_expire(t, &a[1], None);
    }
    ctx.w.integer(i64::from(had));
    Ok(())
}
