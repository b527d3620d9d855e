//! Redis's conversion rules between RESP replies and Lua values, both ways.
//!
//! RESP → Lua (a `redis.call` reply, RESP2 or RESP3 as the script chose with `redis.setresp`):
//! integer → number, bulk → string, RESP2 null bulk or null array → `false`, status →
//! `{ok=...}`, error → `{err=...}`, array → table; RESP3 only: null → `nil`, boolean →
//! boolean, double → `{double=n}`, map → `{map={...}}`, set → `{set={member=true}}`, big
//! number → `{big_number="..."}`, verbatim → `{verbatim_string={format=..., string=...}}`,
//! attributes are dropped.
//!
//! Lua → RESP (a script's result, in the client's protocol): number → integer (truncated),
//! string → bulk, `true` → 1 (RESP2 scripts) or a boolean, `false` → null (RESP2 scripts) or a
//! boolean, `nil` and anything else → null, a table → the first of `err`, `ok`, `double`,
//! `big_number`, `verbatim_string`, `map`, `set` it holds, else an array of its elements 1, 2, ...
//! up to the first `nil`.

use locus_protocol::ReplyWriter;
use mlua::{Table, Value};

/// Deepest nesting converted either way: a script returning a table that contains itself gets
/// an error element instead of recursing forever (Redis: "reached lua stack limit").
pub const MAX_DEPTH: usize = 1000;

/// Pushes the RESP reply at the start of `buf` onto `l`'s stack as one Lua value (the rules
/// above), with Lua's C API only. Returns the bytes consumed; `None` for a reply nested deeper
/// than [`MAX_DEPTH`], a Lua stack that cannot grow, or malformed input (the input is the
/// server's own output, so well-formed; malformed input still never panics), having pushed
/// nothing then. `counted`: an error reply is the command's own, which Redis marks with
/// `ignore_error_stats_update` (its error was counted already).
///
/// # Safety
/// `l` is a running state with a free stack slot (more are checked for, nested). A Lua memory
/// error may unwind this by longjmp: it holds nothing to drop.
pub unsafe fn push_resp(
    l: *mut mlua::ffi::lua_State,
    buf: &[u8],
    depth: usize,
    counted: bool,
) -> Option<usize> {
    use mlua::ffi;
    if depth > MAX_DEPTH {
        return None;
    }
    let eol = memchr_crlf(buf)?;
    let tag = *buf.first()?;
    let line = &buf[1..eol];
    let after = eol + 2;
    let num = || -> Option<i64> { std::str::from_utf8(line).ok()?.parse().ok() };
    // SAFETY: the caller's contract; each level checks room for what it holds at once (a
    // container, a key and a value, the field name of a wrapping table).
    unsafe {
        if ffi::lua_checkstack(l, 6) == 0 {
            return None;
        }
        let push_bytes = |b: &[u8]| ffi::lua_pushlstring(l, b.as_ptr().cast(), b.len());
        // A table {name = <value on top>}.
        let wrap = |name: &std::ffi::CStr| {
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_pushstring(l, name.as_ptr());
            ffi::lua_pushvalue(l, -3);
            ffi::lua_rawset(l, -3);
            ffi::lua_replace(l, -2);
        };
        Some(match tag {
            b'+' => {
                push_bytes(line);
                wrap(c"ok");
                after
            }
            b'-' => {
                push_bytes(line);
                wrap(c"err");
                if counted {
                    ffi::lua_pushstring(l, c"ignore_error_stats_update".as_ptr());
                    ffi::lua_pushboolean(l, 1);
                    ffi::lua_rawset(l, -3);
                }
                after
            }
            b':' => {
                ffi::lua_pushnumber(l, num()? as f64);
                after
            }
            b'$' | b'=' => {
                let n = num()?;
                if n < 0 {
                    ffi::lua_pushboolean(l, 0);
                    return Some(after);
                }
                let n = usize::try_from(n).ok()?;
                let body = buf.get(after..after.checked_add(n)?)?;
                if tag == b'=' && body.len() >= 4 {
                    ffi::lua_createtable(l, 0, 2);
                    ffi::lua_pushstring(l, c"format".as_ptr());
                    push_bytes(&body[..3]);
                    ffi::lua_rawset(l, -3);
                    ffi::lua_pushstring(l, c"string".as_ptr());
                    push_bytes(&body[4..]);
                    ffi::lua_rawset(l, -3);
                    wrap(c"verbatim_string");
                } else {
                    push_bytes(body);
                }
                after + n + 2
            }
            b'*' | b'>' | b'~' | b'%' | b'|' => {
                let n = num()?;
                if n < 0 {
                    ffi::lua_pushboolean(l, 0);
                    return Some(after);
                }
                let n = usize::try_from(n).ok()?;
                let hint = n.min(1 << 16) as i32;
                let mut pos = after;
                let top = ffi::lua_gettop(l);
                // Pushes the next value, or leaves the stack as it was at `top` and fails.
                let next = |pos: &mut usize| -> Option<()> {
                    match push_resp(l, buf.get(*pos..)?, depth + 1, counted) {
                        Some(used) => {
                            *pos += used;
                            Some(())
                        }
                        None => None,
                    }
                };
                let ok = match tag {
                    b'%' | b'~' => {
                        ffi::lua_createtable(l, 0, hint);
                        let mut ok = Some(());
                        for _ in 0..n {
                            ok = next(&mut pos);
                            if ok.is_none() {
                                break;
                            }
                            if tag == b'%' {
                                ok = next(&mut pos);
                                if ok.is_none() {
                                    break;
                                }
                            } else {
                                ffi::lua_pushboolean(l, 1);
                            }
                            ffi::lua_rawset(l, -3);
                        }
                        if ok.is_some() {
                            wrap(if tag == b'%' { c"map" } else { c"set" });
                        }
                        ok
                    }
                    b'|' => {
                        // Attributes: skipped, then the reply they decorate.
                        let mut ok = Some(());
                        for _ in 0..2 * n {
                            ok = next(&mut pos);
                            if ok.is_none() {
                                break;
                            }
                            ffi::lua_pop(l, 1);
                        }
                        ok.and_then(|()| next(&mut pos))
                    }
                    _ => {
                        ffi::lua_createtable(l, hint, 0);
                        let mut ok = Some(());
                        for i in 0..n {
                            ok = next(&mut pos);
                            if ok.is_none() {
                                break;
                            }
                            ffi::lua_rawseti(l, -2, (i + 1) as ffi::lua_Integer);
                        }
                        ok
                    }
                };
                if ok.is_none() {
                    ffi::lua_settop(l, top);
                    return None;
                }
                pos
            }
            b'_' => {
                ffi::lua_pushnil(l);
                after
            }
            b'#' => {
                ffi::lua_pushboolean(l, i32::from(line == b"t"));
                after
            }
            b',' => {
                let s = std::str::from_utf8(line).ok()?;
                let d = match s {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "nan" => f64::NAN,
                    _ => s.parse().ok()?,
                };
                ffi::lua_pushnumber(l, d);
                wrap(c"double");
                after
            }
            b'(' => {
                push_bytes(line);
                wrap(c"big_number");
                after
            }
            _ => return None,
        })
    }
}

fn memchr_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// Writes a Lua value as a RESP reply. `script_resp3`: the script switched to RESP3 with
/// `redis.setresp(3)` (booleans are then booleans, not 1/null).
pub fn lua_to_resp(w: &mut ReplyWriter<'_>, v: &Value, script_resp3: bool, depth: usize) {
    if depth > MAX_DEPTH {
        w.error("ERR reached lua stack limit");
        return;
    }
    match v {
        Value::String(s) => w.bulk(&s.as_bytes()),
        Value::Integer(i) => w.integer(*i),
        Value::Number(n) => w.integer(number_to_integer(*n)),
        Value::Boolean(b) => {
            if script_resp3 {
                w.boolean(*b);
            } else if *b {
                w.integer(1);
            } else {
                w.null();
            }
        }
        Value::Table(t) => table_to_resp(w, t, script_resp3, depth),
        _ => w.null(),
    }
}

fn table_to_resp(w: &mut ReplyWriter<'_>, t: &Table, resp3: bool, depth: usize) {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        let bytes = e.as_bytes();
        let text = String::from_utf8_lossy(&bytes);
        if super::passed_on(&Value::Table(t.clone())) {
            w.error_uncounted(&text);
        } else {
            w.error(&text);
        }
        return;
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        let s = String::from_utf8_lossy(&s.as_bytes()).replace(['\r', '\n'], " ");
        w.simple(&s);
        return;
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => return w.double(d),
        Ok(Value::Integer(d)) => return w.double(d as f64),
        _ => {}
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        let s = String::from_utf8_lossy(&s.as_bytes()).replace(['\r', '\n'], " ");
        w.big_number(&s);
        return;
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string")
        && let (Ok(Value::String(f)), Ok(Value::String(s))) =
            (v.raw_get::<Value>("format"), v.raw_get::<Value>("string"))
    {
        let f = f.as_bytes();
        if f.len() == 3
            && let Ok(f) = std::str::from_utf8(&f)
        {
            w.verbatim(f, &s.as_bytes());
            return;
        }
    }
    // Large tables are walked twice (count, then write) rather than collected: every Lua value
    // held from Rust occupies a slot of mlua's reference stack, which is bounded.
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let n = m.pairs::<Value, Value>().count();
        w.map(n);
        let _ = m.for_each::<Value, Value>(|k, v| {
            lua_to_resp(w, &k, resp3, depth + 1);
            lua_to_resp(w, &v, resp3, depth + 1);
            Ok(())
        });
        return;
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let n = s.pairs::<Value, Value>().count();
        w.set(n);
        let _ = s.for_each::<Value, Value>(|k, _| {
            lua_to_resp(w, &k, resp3, depth + 1);
            Ok(())
        });
        return;
    }
    let mut n = 0;
    while t.raw_get::<Value>(n + 1).is_ok_and(|v| !v.is_nil()) {
        n += 1;
    }
    w.array(n);
    for i in 1..=n {
        let v = t.raw_get::<Value>(i).unwrap_or(Value::Nil);
        lua_to_resp(w, &v, resp3, depth + 1);
    }
}

/// A Lua number as Redis replies it: C's `(long long)` cast, truncated; a NaN, an infinity or a
/// value out of the 64-bit range gives what that cast gives on x86-64, the minimum (Rust's `as`
/// would saturate instead).
pub fn number_to_integer(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// A Lua number as Redis passes it to a command: `%.17g`.
pub fn number_arg(n: f64) -> Vec<u8> {
    if n.fract() == 0.0 && n.abs() < 1e17 {
        return format!("{}", n as i64).into_bytes();
    }
    crate::exec::types::zset::fmt_score(n).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_numbers_reply_as_redis() {
        assert_eq!(number_to_integer(3.99), 3);
        assert_eq!(number_to_integer(-3.99), -3);
        assert_eq!(number_to_integer(2f64.powi(62)), 1 << 62);
        assert_eq!(number_to_integer(2f64.powi(63)), i64::MIN);
        assert_eq!(number_to_integer(-2f64.powi(63)), i64::MIN);
        assert_eq!(number_to_integer(f64::INFINITY), i64::MIN);
        assert_eq!(number_to_integer(f64::NAN), i64::MIN);
    }

    #[test]
    fn g17_matches_c() {
        assert_eq!(number_arg(0.1), b"0.10000000000000001");
        assert_eq!(number_arg(1e20), b"1e+20");
        assert_eq!(number_arg(42.0), b"42");
        assert_eq!(number_arg(-3.0), b"-3");
    }
}
