//! `cmsgpack`, the MessagePack library Redis loads (lua-cmsgpack's API and encoding choices),
//! written here in Rust: `pack(...)`, `unpack(s)`, `unpack_one(s [, offset])`,
//! `unpack_limit(s, limit [, offset])`.
//!
//! Encoding as lua-cmsgpack: an integral number is the smallest integer type that holds it,
//! another number a float32 when that is exact, else a float64; a string is fixstr/str8/16/32;
//! a table whose keys are exactly 1..n is an array, any other a map; tables nested deeper than
//! 16 encode as nil (so a table that contains itself is cut there). Decoding never trusts a
//! length: every read is checked against the input ("Missing bytes in input."), containers
//! nest at most `MAX_DECODE_DEPTH` deep, and a declared count is not preallocated.

use mlua::{Lua, MultiValue, Table, Value};

/// Deepest table nesting `pack` encodes (lua-cmsgpack's LUACMSGPACK_MAX_NESTING).
const MAX_NESTING: usize = 16;
/// Deepest container nesting `unpack` accepts (Redis has had stack overflows here).
const MAX_DECODE_DEPTH: usize = 1000;

/// The `cmsgpack` table.
///
/// # Errors
/// Lua allocation failures.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            if args.is_empty() {
                return Err(mlua::Error::runtime("MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                pack(&mut out, v, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, s: mlua::LuaString| {
            let b = s.as_bytes();
            let mut d = Decoder { lua, s: &b, pos: 0 };
            let mut out = MultiValue::new();
            while d.pos < d.s.len() {
                out.push_back(d.value(0)?);
            }
            Ok(out)
        })?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, (s, offset): (mlua::LuaString, Option<i64>)| {
            unpack_limit(lua, &s.as_bytes(), 1, offset.unwrap_or(0))
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(
            |lua, (s, limit, offset): (mlua::LuaString, i64, Option<i64>)| {
                unpack_limit(lua, &s.as_bytes(), limit, offset.unwrap_or(0))
            },
        )?,
    )?;
    Ok(t)
}

/// Decodes up to `limit` objects (0: all) from `offset`; returns the next offset (-1 at the
/// end) followed by the objects.
fn unpack_limit(lua: &Lua, s: &[u8], limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    if offset < 0 || offset as u64 > s.len() as u64 {
        return Err(mlua::Error::runtime(
            "Start offset is greater than input length.",
        ));
    }
    let mut d = Decoder {
        lua,
        s,
        pos: offset as usize,
    };
    let mut objs = Vec::new();
    while d.pos < s.len() && (limit <= 0 || (objs.len() as i64) < limit) {
        objs.push(d.value(0)?);
    }
    let next = if d.pos >= s.len() { -1 } else { d.pos as i64 };
    let mut out = MultiValue::new();
    out.push_back(Value::Number(next as f64));
    out.extend(objs);
    Ok(out)
}

fn pack_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n < 128 {
            out.push(n as u8);
        } else if n < 256 {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n < 65536 {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= u32::MAX as i64 {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= i64::from(i32::MIN) {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_number(out: &mut Vec<u8>, n: f64) {
    if n.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        pack_int(out, n as i64);
    } else if (n as f32) as f64 == n || n.is_nan() {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_len(
    out: &mut Vec<u8>,
    n: usize,
    fix: u8,
    fix_max: usize,
    b8: Option<u8>,
    b16: u8,
    b32: u8,
) {
    if n < fix_max {
        out.push(fix | n as u8);
    } else if let Some(b8) = b8.filter(|_| n < 256) {
        out.extend_from_slice(&[b8, n as u8]);
    } else if n < 65536 {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn pack(out: &mut Vec<u8>, v: &Value, level: usize) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => pack_number(out, *i as f64),
        Value::Number(n) => pack_number(out, *n),
        Value::String(s) => {
            let b = s.as_bytes();
            pack_len(out, b.len(), 0xa0, 32, Some(0xd9), 0xda, 0xdb);
            out.extend_from_slice(&b);
        }
        Value::Table(t) if level < MAX_NESTING => {
            // lua-cmsgpack's array test: keys are the positive integers 1..count. Walked twice
            // (classify, then encode) rather than collected: see convert.rs.
            let (mut count, mut max, mut is_array) = (0usize, 0.0f64, true);
            for pair in t.pairs::<Value, Value>() {
                let (k, _) = pair?;
                count += 1;
                let n = match k {
                    Value::Integer(i) => i as f64,
                    Value::Number(n) => n,
                    _ => {
                        is_array = false;
                        continue;
                    }
                };
                if n > 0.0 && n.fract() == 0.0 {
                    max = max.max(n);
                } else {
                    is_array = false;
                }
            }
            if is_array && max as usize == count {
                pack_len(out, count, 0x90, 16, None, 0xdc, 0xdd);
                for i in 1..=count {
                    let v: Value = t.raw_get(i)?;
                    pack(out, &v, level + 1)?;
                }
            } else {
                pack_len(out, count, 0x80, 16, None, 0xde, 0xdf);
                t.for_each::<Value, Value>(|k, v| {
                    pack(out, &k, level + 1)?;
                    pack(out, &v, level + 1)
                })?;
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

struct Decoder<'a> {
    lua: &'a Lua,
    s: &'a [u8],
    pos: usize,
}

fn missing() -> mlua::Error {
    mlua::Error::runtime("Missing bytes in input.")
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> mlua::Result<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(missing)?;
        let b = self.s.get(self.pos..end).ok_or_else(missing)?;
        self.pos = end;
        Ok(b)
    }

    fn be(&mut self, n: usize) -> mlua::Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |a, &b| (a << 8) | u64::from(b)))
    }

    fn value(&mut self, depth: usize) -> mlua::Result<Value> {
        if depth > MAX_DECODE_DEPTH {
            return Err(mlua::Error::runtime("Bad data format in input."));
        }
        let tag = self.take(1)?[0];
        let num = |n: f64| Ok(Value::Number(n));
        match tag {
            0x00..=0x7f => num(f64::from(tag)),
            0x80..=0x8f => self.map(usize::from(tag & 0x0f), depth),
            0x90..=0x9f => self.array(usize::from(tag & 0x0f), depth),
            0xa0..=0xbf => self.str(usize::from(tag & 0x1f)),
            0xc0 => Ok(Value::Nil),
            0xc2 => Ok(Value::Boolean(false)),
            0xc3 => Ok(Value::Boolean(true)),
            0xc4 | 0xd9 => {
                let n = self.be(1)? as usize;
                self.str(n)
            }
            0xc5 | 0xda => {
                let n = self.be(2)? as usize;
                self.str(n)
            }
            0xc6 | 0xdb => {
                let n = self.be(4)? as usize;
                self.str(n)
            }
            0xca => num(f64::from(f32::from_bits(self.be(4)? as u32))),
            0xcb => num(f64::from_bits(self.be(8)?)),
            0xcc => num(self.be(1)? as f64),
            0xcd => num(self.be(2)? as f64),
            0xce => num(self.be(4)? as f64),
            0xcf => num(self.be(8)? as f64),
            0xd0 => num(f64::from(self.be(1)? as u8 as i8)),
            0xd1 => num(f64::from(self.be(2)? as u16 as i16)),
            0xd2 => num(f64::from(self.be(4)? as u32 as i32)),
            0xd3 => num(self.be(8)? as i64 as f64),
            0xdc => {
                let n = self.be(2)? as usize;
                self.array(n, depth)
            }
            0xdd => {
                let n = self.be(4)? as usize;
                self.array(n, depth)
            }
            0xde => {
                let n = self.be(2)? as usize;
                self.map(n, depth)
            }
            0xdf => {
                let n = self.be(4)? as usize;
                self.map(n, depth)
            }
            0xe0..=0xff => num(f64::from(tag as i8)),
            _ => Err(mlua::Error::runtime("Bad data format in input.")),
        }
    }

    fn str(&mut self, n: usize) -> mlua::Result<Value> {
        let b = self.take(n)?;
        Ok(Value::String(self.lua.create_string(b)?))
    }

    fn array(&mut self, n: usize, depth: usize) -> mlua::Result<Value> {
        // Every element takes at least one byte: a count beyond the input is refused before
        // any table grows.
        if n > self.s.len() - self.pos {
            return Err(missing());
        }
        let t = self.lua.create_table()?;
        for i in 1..=n {
            let v = self.value(depth + 1)?;
            t.raw_set(i, v)?;
        }
        Ok(Value::Table(t))
    }

    fn map(&mut self, n: usize, depth: usize) -> mlua::Result<Value> {
        if n.saturating_mul(2) > self.s.len() - self.pos {
            return Err(missing());
        }
        let t = self.lua.create_table()?;
        for _ in 0..n {
            let k = self.value(depth + 1)?;
            let v = self.value(depth + 1)?;
            if !k.is_nil() {
                t.raw_set(k, v)?;
            }
        }
        Ok(Value::Table(t))
    }
}
