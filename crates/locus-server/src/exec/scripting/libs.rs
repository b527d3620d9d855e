//! The libraries Redis loads into its Lua VM beside Lua's own, written here in Rust (Redis
//! bundles C libraries; Locus does not copy them): `bit` (LuaBitOp's API: 32-bit two's
//! complement operations on numbers), `cjson` ([`super::cjson`]), `cmsgpack`
//! ([`super::cmsgpack`]) and `struct` ([`super::struct_lib`]).

use mlua::{Lua, Table, Value, Variadic};

/// The libraries built on a script's first use of their name (prelude.lua's global lookup):
/// together about 6 KB of Lua memory that a tenant whose scripts never use them does not hold.
pub const LAZY: [&str; 4] = ["bit", "cjson", "cmsgpack", "struct"];

/// Builds the library `name` (one of [`LAZY`]).
///
/// # Errors
/// Lua allocation failures; an unknown name.
pub fn build(lua: &Lua, name: &str) -> mlua::Result<Table> {
    match name {
        "bit" => bit(lua),
        "cjson" => super::cjson::module(lua),
        "cmsgpack" => super::cmsgpack::module(lua),
        "struct" => super::struct_lib::module(lua),
        other => Err(mlua::Error::runtime(format!("no library {other}"))),
    }
}

/// LuaBitOp's conversion of a number to a 32-bit integer: modulo 2^32, rounded to nearest.
fn tobit_num(n: f64) -> i32 {
    if !n.is_finite() {
        return 0;
    }
    let r = n.round_ties_even();
    r.rem_euclid(4_294_967_296.0) as u32 as i32
}

fn arg(v: &Value, i: usize, fname: &str) -> mlua::Result<i32> {
    match v {
        Value::Integer(n) => Ok(tobit_num(*n as f64)),
        Value::Number(n) => Ok(tobit_num(*n)),
        Value::String(s) => s
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .map(tobit_num)
            .ok_or_else(|| bad_arg(i, fname)),
        _ => Err(bad_arg(i, fname)),
    }
}

fn bad_arg(i: usize, fname: &str) -> mlua::Error {
    mlua::Error::runtime(format!("bad argument #{i} to '{fname}' (number expected)"))
}

fn bit(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "tobit",
        lua.create_function(|_, v: Value| Ok(f64::from(arg(&v, 1, "tobit")?)))?,
    )?;
    t.raw_set(
        "bnot",
        lua.create_function(|_, v: Value| Ok(f64::from(!arg(&v, 1, "bnot")?)))?,
    )?;
    t.raw_set(
        "bswap",
        lua.create_function(|_, v: Value| Ok(f64::from(arg(&v, 1, "bswap")?.swap_bytes())))?,
    )?;
    for (name, op) in [
        ("band", (|a, b| a & b) as fn(i32, i32) -> i32),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ] {
        t.raw_set(
            name,
            lua.create_function(move |_, vs: Variadic<Value>| {
                let mut acc = arg(vs.first().unwrap_or(&Value::Nil), 1, name)?;
                for (i, v) in vs.iter().enumerate().skip(1) {
                    acc = op(acc, arg(v, i + 1, name)?);
                }
                Ok(f64::from(acc))
            })?,
        )?;
    }
    for (name, op) in [
        (
            "lshift",
            (|a: i32, n: u32| ((a as u32) << n) as i32) as fn(i32, u32) -> i32,
        ),
        ("rshift", |a, n| ((a as u32) >> n) as i32),
        ("arshift", |a, n| a >> n),
        ("rol", |a, n| (a as u32).rotate_left(n) as i32),
        ("ror", |a, n| (a as u32).rotate_right(n) as i32),
    ] {
        t.raw_set(
            name,
            lua.create_function(move |_, (a, n): (Value, Value)| {
                let a = arg(&a, 1, name)?;
                let n = (arg(&n, 2, name)? & 31) as u32;
                Ok(f64::from(op(a, n)))
            })?,
        )?;
    }
    t.raw_set(
        "tohex",
        lua.create_function(|_, (v, n): (Value, Option<Value>)| {
            let x = arg(&v, 1, "tohex")? as u32;
            let mut n = match n {
                None | Some(Value::Nil) => 8,
                Some(n) => arg(&n, 2, "tohex")?,
            };
            let upper = n < 0;
            if upper {
                n = n.saturating_neg();
            }
            let n = n.clamp(1, 8) as usize;
            let s = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            Ok(s[8 - n..].to_string())
        })?,
    )?;
    Ok(t)
}
