//! `cjson`, the JSON library Redis loads (lua-cjson 2.1's API and rules), written here in Rust:
//! `encode`, `decode`, `null`, and the settings `encode_max_depth`, `decode_max_depth`,
//! `encode_invalid_numbers`, `decode_invalid_numbers`, `encode_number_precision`,
//! `encode_sparse_array`, `encode_keep_buffer`.
//!
//! Rules kept from lua-cjson: numbers print with `%.14g`; `/` is escaped; an empty table is `{}`;
//! a table whose keys are all positive integers is an array unless excessively sparse; nesting
//! past the depth limits (1000 by default) is an error, never a deep recursion; `null` decodes
//! to `cjson.null` (a light userdata NULL).

use std::sync::Arc;

use mlua::{LightUserData, Lua, Table, Value, Variadic};
use parking_lot::Mutex;

#[derive(Clone, Copy)]
struct Config {
    encode_max_depth: usize,
    decode_max_depth: usize,
    encode_invalid_numbers: bool,
    decode_invalid_numbers: bool,
    precision: usize,
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: false,
            decode_invalid_numbers: true,
            precision: 14,
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
        }
    }
}

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn is_null(v: &Value) -> bool {
    matches!(v, Value::LightUserData(p) if p.0.is_null())
}

/// The `cjson` table.
///
/// # Errors
/// Lua allocation failures.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let cfg = Arc::new(Mutex::new(Config::default()));
    let t = lua.create_table()?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    let c = cfg.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, v: Value| {
            let cfg = *c.lock();
            let mut out = Vec::new();
            encode(&mut out, &v, &cfg, 1)?;
            lua.create_string(&out)
        })?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, s: mlua::LuaString| {
            let cfg = *c.lock();
            let b = s.as_bytes();
            let mut d = Decoder {
                lua,
                s: &b,
                pos: 0,
                cfg,
            };
            d.ws();
            let v = d.value(1)?;
            d.ws();
            if d.pos < d.s.len() {
                return Err(d.err("the end"));
            }
            Ok(v)
        })?,
    )?;
    let setting = |f: fn(&mut Config, &Value) -> mlua::Result<Value>| {
        let c = cfg.clone();
        lua.create_function(move |_, v: Variadic<Value>| {
            let arg = v.first().cloned().unwrap_or(Value::Nil);
            f(&mut c.lock(), &arg)
        })
    };
    t.raw_set(
        "encode_max_depth",
        setting(|c, v| {
            if let Some(n) = num(v) {
                if !(1.0..=2_147_483_647.0).contains(&n) {
                    return Err(mlua::Error::runtime(
                        "bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
                    ));
                }
                c.encode_max_depth = n as usize;
            }
            Ok(Value::Number(c.encode_max_depth as f64))
        })?,
    )?;
    t.raw_set(
        "decode_max_depth",
        setting(|c, v| {
            if let Some(n) = num(v) {
                if !(1.0..=2_147_483_647.0).contains(&n) {
                    return Err(mlua::Error::runtime(
                        "bad argument #1 to 'decode_max_depth' (expected integer between 1 and 2147483647)",
                    ));
                }
                c.decode_max_depth = n as usize;
            }
            Ok(Value::Number(c.decode_max_depth as f64))
        })?,
    )?;
    t.raw_set(
        "encode_number_precision",
        setting(|c, v| {
            if let Some(n) = num(v) {
                if !(1.0..=14.0).contains(&n) {
                    return Err(mlua::Error::runtime(
                        "bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)",
                    ));
                }
                c.precision = n as usize;
            }
            Ok(Value::Number(c.precision as f64))
        })?,
    )?;
    t.raw_set(
        "encode_invalid_numbers",
        setting(|c, v| {
            if let Value::Boolean(b) = v {
                c.encode_invalid_numbers = *b;
            }
            Ok(Value::Boolean(c.encode_invalid_numbers))
        })?,
    )?;
    t.raw_set(
        "decode_invalid_numbers",
        setting(|c, v| {
            if let Value::Boolean(b) = v {
                c.decode_invalid_numbers = *b;
            }
            Ok(Value::Boolean(c.decode_invalid_numbers))
        })?,
    )?;
    t.raw_set(
        "encode_keep_buffer",
        setting(|_, _| Ok(Value::Boolean(true)))?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "encode_sparse_array",
        lua.create_function(move |_, v: Variadic<Value>| {
            let mut c = c.lock();
            if let Some(Value::Boolean(b)) = v.first() {
                c.sparse_convert = *b;
            }
            if let Some(n) = v.get(1).and_then(num) {
                c.sparse_ratio = n as i64;
            }
            if let Some(n) = v.get(2).and_then(num) {
                c.sparse_safe = n as i64;
            }
            Ok((c.sparse_convert, c.sparse_ratio, c.sparse_safe))
        })?,
    )?;
    Ok(t)
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// `%.<precision>g`.
pub(crate) fn format_g(n: f64, precision: usize) -> String {
    if n == n.trunc() && n.abs() < 1e15 {
        if n == 0.0 && n.is_sign_negative() {
            return "-0".into();
        }
        let s = format!("{}", n as i64);
        if s.len() <= precision + usize::from(n < 0.0) {
            return s;
        }
    }
    let sci = format!("{:.*e}", precision.saturating_sub(1), n);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= precision as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), exp.abs())
    } else {
        let decimals = (precision as i32 - 1 - exp).max(0) as usize;
        trim(&format!("{:.*}", decimals, n))
    }
}

fn encode_number(out: &mut Vec<u8>, n: f64, cfg: &Config) -> mlua::Result<()> {
    if !n.is_finite() {
        if !cfg.encode_invalid_numbers {
            return Err(mlua::Error::runtime(
                "Cannot serialise number: must not be NaN or Inf",
            ));
        }
        out.extend_from_slice(if n.is_nan() {
            b"nan"
        } else if n > 0.0 {
            b"inf"
        } else {
            b"-inf"
        });
        return Ok(());
    }
    out.extend_from_slice(format_g(n, cfg.precision).as_bytes());
    Ok(())
}

fn encode_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        Value::LightUserData(_) | Value::UserData(_) => "userdata",
        _ => "value",
    }
}

fn encode(out: &mut Vec<u8>, v: &Value, cfg: &Config, depth: usize) -> mlua::Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        v if is_null(v) => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => encode_number(out, *i as f64, cfg)?,
        Value::Number(n) => encode_number(out, *n, cfg)?,
        Value::String(s) => encode_string(out, &s.as_bytes()),
        Value::Table(t) => {
            if depth > cfg.encode_max_depth {
                return Err(mlua::Error::runtime(format!(
                    "Cannot serialise, excessive nesting ({depth})"
                )));
            }
            // Walked twice (classify, then encode) rather than collected: see convert.rs.
            match array_length(t, cfg)? {
                Some(len) => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item: Value = t.raw_get(i)?;
                        encode(out, &item, cfg, depth + 1)?;
                    }
                    out.push(b']');
                }
                None => {
                    out.push(b'{');
                    let mut first = true;
                    t.for_each::<Value, Value>(|k, val| {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::String(s) => encode_string(out, &s.as_bytes()),
                            Value::Integer(i) => {
                                encode_string(out, format_g(*i as f64, cfg.precision).as_bytes())
                            }
                            Value::Number(x) => {
                                encode_string(out, format_g(*x, cfg.precision).as_bytes())
                            }
                            other => {
                                return Err(mlua::Error::runtime(format!(
                                    "Cannot serialise {}: table key must be a number or string",
                                    type_name(other)
                                )));
                            }
                        }
                        out.push(b':');
                        encode(out, &val, cfg, depth + 1)
                    })?;
                    out.push(b'}');
                }
            }
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "Cannot serialise {}: type not supported",
                type_name(other)
            )));
        }
    }
    Ok(())
}

/// lua-cjson's array test: every key a positive integer; `None` for an object (or an empty
/// table); an excessively sparse array is an error unless converted to an object.
fn array_length(t: &Table, cfg: &Config) -> mlua::Result<Option<usize>> {
    let mut max = 0i64;
    let mut items = 0i64;
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        let n = match k {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if n < 1.0 || n.fract() != 0.0 {
            return Ok(None);
        }
        max = max.max(n as i64);
        items += 1;
    }
    if items == 0 {
        return Ok(None);
    }
    if cfg.sparse_ratio > 0 && max > items * cfg.sparse_ratio && max > cfg.sparse_safe {
        if !cfg.sparse_convert {
            return Err(mlua::Error::runtime(
                "Cannot serialise table: excessively sparse array",
            ));
        }
        return Ok(None);
    }
    Ok(Some(max as usize))
}

struct Decoder<'a> {
    lua: &'a Lua,
    s: &'a [u8],
    pos: usize,
    cfg: Config,
}

impl Decoder<'_> {
    fn err(&self, expected: &str) -> mlua::Error {
        let found = match self.s.get(self.pos) {
            None => "the end".to_string(),
            Some(_) => "invalid token".to_string(),
        };
        mlua::Error::runtime(format!(
            "Expected {expected} but found {found} at character {}",
            self.pos + 1
        ))
    }

    fn ws(&mut self) {
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> mlua::Result<Value> {
        match self.s.get(self.pos) {
            Some(b'{') | Some(b'[') if depth > self.cfg.decode_max_depth => {
                Err(mlua::Error::runtime(format!(
                    "Found too many nested data structures ({depth}) at character {}",
                    self.pos + 1
                )))
            }
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::String(self.lua.create_string(self.string()?)?)),
            Some(b't') if self.s[self.pos..].starts_with(b"true") => {
                self.pos += 4;
                Ok(Value::Boolean(true))
            }
            Some(b'f') if self.s[self.pos..].starts_with(b"false") => {
                self.pos += 5;
                Ok(Value::Boolean(false))
            }
            Some(b'n') if self.s[self.pos..].starts_with(b"null") => {
                self.pos += 4;
                Ok(null())
            }
            Some(c) if *c == b'-' || c.is_ascii_digit() || self.invalid_number_start() => {
                self.number()
            }
            _ => Err(self.err("value")),
        }
    }

    fn invalid_number_start(&self) -> bool {
        self.cfg.decode_invalid_numbers && {
            let rest = &self.s[self.pos..];
            rest.len() >= 3
                && (rest[..3].eq_ignore_ascii_case(b"nan")
                    || rest[..3].eq_ignore_ascii_case(b"inf"))
        }
    }

    fn number(&mut self) -> mlua::Result<Value> {
        let start = self.pos;
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.'))
        {
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
        let lower = text.to_ascii_lowercase();
        let v = if lower.starts_with("0x") || lower.starts_with("-0x") {
            None
        } else if self.cfg.decode_invalid_numbers
            && matches!(
                lower.as_str(),
                "nan" | "-nan" | "inf" | "-inf" | "infinity" | "-infinity"
            )
        {
            lower.parse::<f64>().ok().or(Some(f64::NAN))
        } else if lower.contains("inf") || lower.contains("nan") {
            None
        } else {
            text.parse::<f64>().ok()
        };
        match v {
            Some(n) => Ok(Value::Number(n)),
            None => {
                self.pos = start;
                Err(self.err("value"))
            }
        }
    }

    fn string(&mut self) -> mlua::Result<Vec<u8>> {
        self.pos += 1; // opening quote
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return Err(mlua::Error::runtime(format!(
                    "Expected object key string but found unexpected end of string at character {}",
                    self.pos + 1
                )));
            };
            self.pos += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&e) = self.s.get(self.pos) else {
                        return Err(self.err("escape"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let cp = self.hex4()?;
                            let cp = if (0xd800..0xdc00).contains(&cp)
                                && self.s.get(self.pos..self.pos + 2) == Some(b"\\u")
                            {
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err(self.err("valid unicode escape"));
                                }
                                0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                cp
                            };
                            let ch = char::from_u32(cp)
                                .ok_or_else(|| self.err("valid unicode escape"))?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => {
                            self.pos -= 2;
                            return Err(self.err("valid escape"));
                        }
                    }
                }
                _ => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> mlua::Result<u32> {
        let h = self
            .s
            .get(self.pos..self.pos + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("unicode escape"))?;
        self.pos += 4;
        Ok(h)
    }

    fn array(&mut self, depth: usize) -> mlua::Result<Value> {
        self.pos += 1;
        let t = self.lua.create_table()?;
        self.ws();
        if self.s.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Table(t));
        }
        let mut i = 1;
        loop {
            self.ws();
            let v = self.value(depth + 1)?;
            t.raw_set(i, v)?;
            i += 1;
            self.ws();
            match self.s.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Table(t));
                }
                _ => return Err(self.err("comma or array end")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> mlua::Result<Value> {
        self.pos += 1;
        let t = self.lua.create_table()?;
        self.ws();
        if self.s.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Table(t));
        }
        loop {
            self.ws();
            if self.s.get(self.pos) != Some(&b'"') {
                return Err(self.err("object key string"));
            }
            let k = self.string()?;
            self.ws();
            if self.s.get(self.pos) != Some(&b':') {
                return Err(self.err("colon"));
            }
            self.pos += 1;
            self.ws();
            let v = self.value(depth + 1)?;
            t.raw_set(self.lua.create_string(&k)?, v)?;
            self.ws();
            match self.s.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Table(t));
                }
                _ => return Err(self.err("comma or object end")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_lua_cjson() {
        assert_eq!(format_g(0.0003, 14), "0.0003");
        assert_eq!(format_g(-5000.0, 14), "-5000");
        assert_eq!(format_g(1023.2, 14), "1023.2");
        assert_eq!(format_g(0.1, 14), "0.1");
        assert_eq!(format_g(1e20, 14), "1e+20");
        assert_eq!(format_g(123456789012345.0, 14), "1.2345678901234e+14");
    }
}
