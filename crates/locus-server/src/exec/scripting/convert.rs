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
use mlua::{Lua, Table, Value};

/// Deepest nesting converted either way: a script returning a table that contains itself gets
/// an error element instead of recursing forever (Redis: "reached lua stack limit").
pub const MAX_DEPTH: usize = 1000;

/// Parses one RESP reply at the start of `buf` into a Lua value. Returns the value and the
/// bytes consumed. The input is the server's own output, so it is well-formed; malformed input
/// still gives an error, never a panic.
pub fn resp_to_lua(lua: &Lua, buf: &[u8], depth: usize) -> mlua::Result<(Value, usize)> {
    let bad = || mlua::Error::runtime("malformed reply");
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime("reply nested too deeply"));
    }
    let eol = memchr_crlf(buf).ok_or_else(bad)?;
    let line = &buf[1..eol];
    let after = eol + 2;
    let num = || -> mlua::Result<i64> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    };
    let tag = *buf.first().ok_or_else(bad)?;
    Ok(match tag {
        b'+' => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(line)?)?;
            (Value::Table(t), after)
        }
        b'-' => {
            let t = lua.create_table()?;
            t.raw_set("err", lua.create_string(line)?)?;
            t.raw_set("ignore_error_stats_update", true)?;
            (Value::Table(t), after)
        }
        b':' => (Value::Number(num()? as f64), after),
        b'$' | b'=' => {
            let n = num()?;
            if n < 0 {
                return Ok((Value::Boolean(false), after));
            }
            let n = n as usize;
            let body = buf.get(after..after + n).ok_or_else(bad)?;
            let v = if tag == b'=' && body.len() >= 4 {
                let t = lua.create_table()?;
                let inner = lua.create_table()?;
                inner.raw_set("format", lua.create_string(&body[..3])?)?;
                inner.raw_set("string", lua.create_string(&body[4..])?)?;
                t.raw_set("verbatim_string", inner)?;
                Value::Table(t)
            } else {
                Value::String(lua.create_string(body)?)
            };
            (v, after + n + 2)
        }
        b'*' | b'>' | b'~' | b'%' | b'|' => {
            let n = num()?;
            if n < 0 {
                return Ok((Value::Boolean(false), after));
            }
            let n = n as usize;
            let mut pos = after;
            match tag {
                b'%' => {
                    let inner = lua.create_table()?;
                    for _ in 0..n {
                        let (k, used) = resp_to_lua(lua, &buf[pos..], depth + 1)?;
                        pos += used;
                        let (v, used) = resp_to_lua(lua, &buf[pos..], depth + 1)?;
                        pos += used;
                        inner.raw_set(k, v)?;
                    }
                    let t = lua.create_table()?;
                    t.raw_set("map", inner)?;
                    (Value::Table(t), pos)
                }
                b'~' => {
                    let inner = lua.create_table()?;
                    for _ in 0..n {
                        let (k, used) = resp_to_lua(lua, &buf[pos..], depth + 1)?;
                        pos += used;
                        inner.raw_set(k, true)?;
                    }
                    let t = lua.create_table()?;
                    t.raw_set("set", inner)?;
                    (Value::Table(t), pos)
                }
                b'|' => {
                    // Attributes: skipped, then the reply they decorate.
                    for _ in 0..2 * n {
                        let (_, used) = resp_to_lua(lua, &buf[pos..], depth + 1)?;
                        pos += used;
                    }
                    let (v, used) = resp_to_lua(lua, &buf[pos..], depth + 1)?;
                    (v, pos + used)
                }
                _ => {
                    let t = lua.create_table_with_capacity(n.min(1 << 16), 0)?;
                    for i in 0..n {
                        let (v, used) = resp_to_lua(lua, &buf[pos..], depth + 1)?;
                        pos += used;
                        t.raw_set(i + 1, v)?;
                    }
                    (Value::Table(t), pos)
                }
            }
        }
        b'_' => (Value::Nil, after),
        b'#' => (Value::Boolean(line == b"t"), after),
        b',' => {
            let s = std::str::from_utf8(line).map_err(|_| bad())?;
            let d = match s {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" => f64::NAN,
                _ => s.parse().map_err(|_| bad())?,
            };
            let t = lua.create_table()?;
            t.raw_set("double", d)?;
            (Value::Table(t), after)
        }
        b'(' => {
            let t = lua.create_table()?;
            t.raw_set("big_number", lua.create_string(line)?)?;
            (Value::Table(t), after)
        }
        _ => return Err(bad()),
    })
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
        Value::Number(n) => w.integer(*n as i64),
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
        w.error(&String::from_utf8_lossy(&e.as_bytes()));
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
    fn g17_matches_c() {
        assert_eq!(number_arg(0.1), b"0.10000000000000001");
        assert_eq!(number_arg(1e20), b"1e+20");
        assert_eq!(number_arg(42.0), b"42");
        assert_eq!(number_arg(-3.0), b"-3");
    }
}
