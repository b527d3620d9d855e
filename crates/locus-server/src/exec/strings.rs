//! String commands: GET SET (and its options) SETNX SETEX PSETEX GETSET GETDEL GETEX MGET MSET
//! MSETNX APPEND STRLEN GETRANGE SETRANGE INCR DECR INCRBY DECRBY INCRBYFLOAT LCS.

use super::longdouble::LongDouble;
use locus_engine::{Expire, SetCond, SetOptions};

use super::{Args, CmdError, CmdResult, Ctx, int_arg, is, parse_f64, parse_i64};

/// `proto-max-bulk-len`: the longest string a command may build.
pub(super) fn max_len(ctx: &Ctx<'_>) -> u64 {
    ctx.fx.proto_max_bulk_len()
}

/// Refuses a value the engine cannot store before building it (APPEND / SETRANGE would
/// otherwise allocate up to proto-max-bulk-len only for the engine to refuse it).
pub(super) fn check_fits(ctx: &Ctx<'_>, key: &[u8], value_len: u64) -> CmdResult {
    let max = ctx.eng.max_item_size();
    let size = value_len.saturating_add(key.len() as u64);
    if size > max {
        // Larger than the whole budget is Redis's OOM; larger than any item (2 GiB), the limit.
        if max == ctx.eng.config().maxmemory {
            return Err(CmdError::Oom);
        }
        return Err(CmdError::ItemTooLarge { size, max });
    }
    Ok(())
}

/// GET key
pub fn get(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    match ctx.eng.get_str(t, &a[1])? {
        Some(v) => ctx.w.bulk(v),
        None => ctx.w.null(),
    }
    Ok(())
}

/// Which unit an expire argument is in, and whether it is absolute.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ExpireArg {
    /// EX seconds
    Ex,
    /// PX milliseconds
    Px,
    /// EXAT unix seconds
    ExAt,
    /// PXAT unix milliseconds
    PxAt,
}

/// Converts an expire option to an absolute unix-ms time with Redis's checks
/// (`invalid expire time in '<cmd>' command` for <= 0 or overflow).
pub fn expire_to_abs(kind: ExpireArg, raw: &[u8], now_ms: u64, cmd: &str) -> Result<u64, CmdError> {
    let v = int_arg(raw)?;
    let invalid = || CmdError::msg(format!("ERR invalid expire time in '{cmd}' command"));
    if v <= 0 {
        return Err(invalid());
    }
    let ms = match kind {
        ExpireArg::Ex | ExpireArg::ExAt => v.checked_mul(1000).ok_or_else(invalid)?,
        ExpireArg::Px | ExpireArg::PxAt => v,
    };
    let abs = match kind {
        ExpireArg::Ex | ExpireArg::Px => ms.checked_add(now_ms as i64).ok_or_else(invalid)?,
        _ => ms,
    };
    Ok(abs as u64)
}

fn opts(expire: Expire, cond: SetCond) -> SetOptions {
    SetOptions { expire, cond }
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL]`
pub fn set(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let mut cond = SetCond::Always;
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut exp: Option<(ExpireArg, &[u8])> = None;
    let mut i = 3;
    while i < a.len() {
        let o = &a[i][..];
        let next = a.get(i + 1).map(|v| &v[..]);
        if is(o, "nx") && !xx {
            nx = true;
            cond = SetCond::IfAbsent;
        } else if is(o, "xx") && !nx {
            xx = true;
            cond = SetCond::IfPresent;
        } else if is(o, "get") {
            get = true;
        } else if is(o, "keepttl") && exp.is_none() {
            keepttl = true;
        } else if !keepttl
            && exp.is_none()
            && next.is_some()
            && (is(o, "ex") || is(o, "px") || is(o, "exat") || is(o, "pxat"))
        {
            let kind = if is(o, "ex") {
                ExpireArg::Ex
            } else if is(o, "px") {
                ExpireArg::Px
            } else if is(o, "exat") {
                ExpireArg::ExAt
            } else {
                ExpireArg::PxAt
            };
            exp = next.map(|n| (kind, n));
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    let expire = match exp {
        Some((kind, raw)) => Expire::AtMs(expire_to_abs(kind, raw, ctx.eng.now_ms(), "set")?),
        None if keepttl => Expire::Keep,
        None => Expire::Persist,
    };
    let old = if get {
        ctx.eng.peek_str(t, &a[1])?.map(<[u8]>::to_vec)
    } else {
        None
    };
    let done = ctx.eng.set(t, &a[1], &a[2], opts(expire, cond))?;
    if get {
        match old {
            Some(v) => ctx.w.bulk(&v),
            None => ctx.w.null(),
        }
    } else if done {
        ctx.w.ok();
    } else {
        ctx.w.null();
    }
    Ok(())
}

/// SETNX key value
pub fn setnx(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let done = ctx
        .eng
        .set(t, &a[1], &a[2], opts(Expire::Persist, SetCond::IfAbsent))?;
    ctx.w.integer(i64::from(done));
    Ok(())
}

fn setex_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, kind: ExpireArg, name: &str) -> CmdResult {
    let t = ctx.t()?;
    let at = expire_to_abs(kind, &a[2], ctx.eng.now_ms(), name)?;
    ctx.eng
        .set(t, &a[1], &a[3], opts(Expire::AtMs(at), SetCond::Always))?;
    ctx.w.ok();
    Ok(())
}

/// SETEX key seconds value
pub fn setex(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    setex_generic(ctx, a, ExpireArg::Ex, "setex")
}

/// PSETEX key ms value
pub fn psetex(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    setex_generic(ctx, a, ExpireArg::Px, "psetex")
}

/// GETSET key value
pub fn getset(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let old = ctx.eng.peek_str(t, &a[1])?.map(<[u8]>::to_vec);
    ctx.eng.set(t, &a[1], &a[2], SetOptions::default())?;
    match old {
        Some(v) => ctx.w.bulk(&v),
        None => ctx.w.null(),
    }
    Ok(())
}

/// GETDEL key
pub fn getdel(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    match ctx.eng.get_str(t, &a[1])?.map(<[u8]>::to_vec) {
        Some(v) => {
            ctx.eng.delete(t, &a[1]);
            ctx.w.bulk(&v);
        }
        None => ctx.w.null(),
    }
    Ok(())
}

/// `GETEX key [EX s|PX ms|EXAT ts|PXAT ms-ts|PERSIST]`
pub fn getex(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let mut persist = false;
    let mut exp: Option<(ExpireArg, &[u8])> = None;
    let mut i = 2;
    while i < a.len() {
        let o = &a[i][..];
        let next = a.get(i + 1).map(|v| &v[..]);
        if is(o, "persist") && exp.is_none() && !persist {
            persist = true;
        } else if exp.is_none()
            && !persist
            && next.is_some()
            && (is(o, "ex") || is(o, "px") || is(o, "exat") || is(o, "pxat"))
        {
            let kind = if is(o, "ex") {
                ExpireArg::Ex
            } else if is(o, "px") {
                ExpireArg::Px
            } else if is(o, "exat") {
                ExpireArg::ExAt
            } else {
                ExpireArg::PxAt
            };
            exp = next.map(|n| (kind, n));
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    // Like Redis, a missing key answers nil before the expire value is checked.
    let Some(v) = ctx.eng.get_str(t, &a[1])?.map(<[u8]>::to_vec) else {
        ctx.w.null();
        return Ok(());
    };
    let now = ctx.eng.now_ms();
    let at = match exp {
        Some((kind, raw)) => Some(expire_to_abs(kind, raw, now, "getex")?),
        None => None,
    };
    if let Some(at) = at {
        if at <= now {
            ctx.eng.delete(t, &a[1]);
        } else {
            ctx.eng.set_expire(t, &a[1], Some(at));
        }
    } else if persist {
        ctx.eng.set_expire(t, &a[1], None);
    }
    ctx.w.bulk(&v);
    Ok(())
}

/// `MGET key [key ...]`
pub fn mget(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    ctx.w.array(a.len() - 1);
    for k in &a[1..] {
        match ctx.eng.get(t, k) {
            Some(v) => ctx.w.bulk(v),
            None => ctx.w.null(),
        }
    }
    Ok(())
}

/// `MSET key value [key value ...]`
pub fn mset(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("mset".into()));
    }
    let t = ctx.t()?;
    for kv in a[1..].chunks(2) {
        ctx.eng.set(t, &kv[0], &kv[1], SetOptions::default())?;
    }
    ctx.w.ok();
    Ok(())
}

/// `MSETNX key value [key value ...]`
pub fn msetnx(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("msetnx".into()));
    }
    let t = ctx.t()?;
    if a[1..].chunks(2).any(|kv| ctx.eng.exists(t, &kv[0])) {
        ctx.w.integer(0);
        return Ok(());
    }
    for kv in a[1..].chunks(2) {
        ctx.eng.set(t, &kv[0], &kv[1], SetOptions::default())?;
    }
    ctx.w.integer(1);
    Ok(())
}

/// APPEND key value
pub fn append(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let old = ctx.eng.peek_str(t, &a[1])?.map(<[u8]>::to_vec);
    let existed = old.is_some();
    let mut v = old.unwrap_or_default();
    if (v.len() + a[2].len()) as u64 > max_len(ctx) {
        return Err(CmdError::StringTooLong);
    }
    check_fits(ctx, &a[1], (v.len() + a[2].len()) as u64)?;
    v.extend_from_slice(&a[2]);
    ctx.eng
        .set(t, &a[1], &v, opts(Expire::Keep, SetCond::Always))?;
    ctx.fx
        .note_encoding(if existed { "raw" } else { "set" }, t, &[&a[1][..]]);
    ctx.w.integer(v.len() as i64);
    Ok(())
}

/// STRLEN key
pub fn strlen(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n = ctx.eng.get_str(t, &a[1])?.map_or(0, <[u8]>::len);
    ctx.w.integer(n as i64);
    Ok(())
}

/// GETRANGE key start end
pub fn getrange(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let mut start = int_arg(&a[2])?;
    let mut end = int_arg(&a[3])?;
    let Some(v) = ctx.eng.get_str(t, &a[1])? else {
        ctx.w.bulk(b"");
        return Ok(());
    };
    let len = v.len() as i64;
    if start < 0 && end < 0 && start > end {
        ctx.w.bulk(b"");
        return Ok(());
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        ctx.w.bulk(b"");
    } else {
        ctx.w.bulk(&v[start as usize..=end as usize]);
    }
    Ok(())
}

/// SETRANGE key offset value
pub fn setrange(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let off = int_arg(&a[2])?;
    if off < 0 {
        return Err(CmdError::msg("ERR offset is out of range"));
    }
    let val = &a[3];
    let cur = ctx.eng.peek_str(t, &a[1])?.map(<[u8]>::to_vec);
    if val.is_empty() {
        ctx.w.integer(cur.map_or(0, |c| c.len() as i64));
        return Ok(());
    }
    let need = (off as u64).saturating_add(val.len() as u64);
    if need > max_len(ctx) {
        return Err(CmdError::StringTooLong);
    }
    check_fits(ctx, &a[1], need)?;
    let mut v = cur.unwrap_or_default();
    let off = off as usize;
    if v.len() < off + val.len() {
        v.resize(off + val.len(), 0);
    }
    v[off..off + val.len()].copy_from_slice(val);
    ctx.eng
        .set(t, &a[1], &v, opts(Expire::Keep, SetCond::Always))?;
    ctx.fx.note_encoding("raw", t, &[&a[1][..]]);
    ctx.w.integer(v.len() as i64);
    Ok(())
}

fn incr_generic(ctx: &mut Ctx<'_>, key: &[u8], by: i64) -> CmdResult {
    let t = ctx.t()?;
    let cur = match ctx.eng.peek_str(t, key)? {
        Some(v) => parse_i64(v).ok_or(CmdError::NotInteger)?,
        None => 0,
    };
    let new = cur.checked_add(by).ok_or(CmdError::Overflow)?;
    let mut b = itoa::Buffer::new();
    ctx.eng.set(
        t,
        key,
        b.format(new).as_bytes(),
        opts(Expire::Keep, SetCond::Always),
    )?;
    ctx.w.integer(new);
    Ok(())
}

/// INCR key
pub fn incr(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    incr_generic(ctx, &a[1], 1)
}

/// DECR key
pub fn decr(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    incr_generic(ctx, &a[1], -1)
}

/// INCRBY key n
pub fn incrby(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let by = int_arg(&a[2])?;
    incr_generic(ctx, &a[1], by)
}

/// DECRBY key n
pub fn decrby(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let by = int_arg(&a[2])?;
    if by == i64::MIN {
        return Err(CmdError::msg("ERR decrement would overflow"));
    }
    incr_generic(ctx, &a[1], -by)
}

/// INCRBYFLOAT key f: computed in emulated x87 `long double` and printed as Redis does
/// (`%.17Lf`, trailing zeros trimmed), see [`super::longdouble`].
pub fn incrbyfloat(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let nan_inf = || CmdError::msg("ERR increment would produce NaN or Infinity");
    // As Redis: the current value is parsed first, then the increment. Decimal numbers parse
    // exactly; "inf" parses (strtold) but makes the sum infinite; anything else is not a float.
    let parse = |raw: &[u8]| match LongDouble::parse(raw) {
        Some(v) => Ok(v),
        None => match parse_f64(raw) {
            Some(f) if f.is_infinite() => Err(nan_inf()),
            _ => Err(CmdError::NotFloat),
        },
    };
    let cur = match ctx.eng.peek_str(t, &a[1])? {
        Some(v) => parse(v)?,
        None => LongDouble::ZERO,
    };
    let by = parse(&a[2])?;
    let s = cur.checked_add(by).ok_or_else(nan_inf)?.to_redis_string();
    ctx.eng
        .set(t, &a[1], s.as_bytes(), opts(Expire::Keep, SetCond::Always))?;
    // Redis stores the result as a plain string object: embstr up to 44 bytes, even if it
    // looks like an integer.
    let enc = if s.len() <= 44 { "embstr" } else { "raw" };
    ctx.fx.note_encoding(enc, t, &[&a[1][..]]);
    ctx.w.bulk(s.as_bytes());
    Ok(())
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: the longest common subsequence
/// of two strings (missing keys are empty), as Redis 7 computes it: the dynamic-programming
/// table is walked back from its end, a tie going to the second string's shorter prefix, so the
/// same subsequence and the same match ranges (last match first) come out. The table takes
/// `4 x (len1 + 1) x (len2 + 1)` bytes of transient memory, refused past `proto-max-bulk-len`
/// as in Redis.
pub fn lcs(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (mut want_len, mut want_idx, mut with_match_len) = (false, false, false);
    let mut min_match_len = 0u64;
    let mut i = 3;
    while i < a.len() {
        let o = &a[i][..];
        if is(o, "len") {
            want_len = true;
        } else if is(o, "idx") {
            want_idx = true;
        } else if is(o, "withmatchlen") {
            with_match_len = true;
        } else if is(o, "minmatchlen") && i + 1 < a.len() {
            i += 1;
            min_match_len = int_arg(&a[i])?.max(0) as u64;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if want_len && want_idx {
        return Err(CmdError::msg(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    let t = ctx.t()?;
    let x = ctx
        .eng
        .get_str(t, &a[1])?
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let y = ctx
        .eng
        .get_str(t, &a[2])?
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    if x.len() as u64 >= u64::from(u32::MAX) - 1 || y.len() as u64 >= u64::from(u32::MAX) - 1 {
        return Err(CmdError::msg("ERR String too long for LCS"));
    }
    let cells = (x.len() as u64 + 1).saturating_mul(y.len() as u64 + 1);
    if cells.saturating_mul(4) > max_len(ctx) {
        return Err(CmdError::msg(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    // Locus's own bound as well: the table is outside every tenant's budget and is filled under
    // the engine lock, so one tenant's LCS of two 100 KB strings (40 GB by Redis's bound alone)
    // must not take the server's memory or stall the other tenants.
    if cells.saturating_mul(4) > LCS_MAX_TABLE_BYTES {
        return Err(CmdError::msg(format!(
            "ERR Insufficient memory, transient memory for LCS exceeds Locus's limit of {} MiB (the strings' lengths multiplied, times 4 bytes)",
            LCS_MAX_TABLE_BYTES >> 20
        )));
    }
    let table = lcs_table(&x, &y);
    let w = y.len() + 1;
    let at = |i: usize, j: usize| table[i * w + j];
    let total = at(x.len(), y.len());
    if want_len {
        ctx.w.integer(i64::from(total));
        return Ok(());
    }
    // Walk back from the end; contiguous matches form ranges, emitted as each one closes.
    let mut seq = vec![0u8; total as usize];
    let mut k = seq.len();
    let mut ranges: Vec<[u64; 4]> = Vec::new();
    let mut open: Option<[u64; 4]> = None; // [x_start, x_end, y_start, y_end]
    let (mut i, mut j) = (x.len(), y.len());
    while i > 0 && j > 0 {
        let close = if x[i - 1] == y[j - 1] {
            k -= 1;
            seq[k] = x[i - 1];
            let (xi, yj) = ((i - 1) as u64, (j - 1) as u64);
            match open.as_mut() {
                Some(r) => {
                    r[0] = xi;
                    r[2] = yj;
                }
                None => open = Some([xi, xi, yj, yj]),
            }
            let at_start = i == 1 || j == 1;
            i -= 1;
            j -= 1;
            at_start
        } else {
            if at(i - 1, j) > at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            open.is_some()
        };
        if close && let Some(r) = open.take() {
            let len = r[1] - r[0] + 1;
            if want_idx && len >= min_match_len {
                ranges.push(r);
            }
        }
    }
    if !want_idx {
        ctx.w.bulk(&seq);
        return Ok(());
    }
    ctx.w.map(2);
    ctx.w.bulk(b"matches");
    ctx.w.array(ranges.len());
    for r in &ranges {
        ctx.w.array(if with_match_len { 3 } else { 2 });
        for pair in [[r[0], r[1]], [r[2], r[3]]] {
            ctx.w.array(2);
            ctx.w.integer(pair[0] as i64);
            ctx.w.integer(pair[1] as i64);
        }
        if with_match_len {
            ctx.w.integer((r[1] - r[0] + 1) as i64);
        }
    }
    ctx.w.bulk(b"len");
    ctx.w.integer(i64::from(total));
    Ok(())
}

/// Largest LCS table Locus fills (4 bytes a cell): two 4 KiB strings need 64 MiB.
const LCS_MAX_TABLE_BYTES: u64 = 64 << 20;

/// `table[i * (y.len() + 1) + j]`: the LCS length of `x[..i]` and `y[..j]`.
fn lcs_table(x: &[u8], y: &[u8]) -> Vec<u32> {
    let w = y.len() + 1;
    let mut t = vec![0u32; (x.len() + 1) * w];
    for i in 1..=x.len() {
        for j in 1..=y.len() {
            t[i * w + j] = if x[i - 1] == y[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    t
}
