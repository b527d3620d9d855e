//! `struct`, the library Redis loads for packing numbers and strings into binary strings:
//! `struct.pack(fmt, v1, ...)`, `struct.unpack(fmt, data [, pos])` (the values, then the position
//! after them) and `struct.size(fmt)`, with the format language of Roberto Ierusalimschy's
//! struct library as Redis 7.0 bundles it (written here from its documentation and behaviour):
//!
//! ```text
//!   >  <        big / little endian (the default is the machine's: little)
//!   !n  !       largest alignment n (a power of 2; `!` alone: 8); the default is 1 (packed)
//!   b B h H     signed / unsigned char (1), short (2)
//!   l L T       signed / unsigned long (8), size_t (8)
//!   i[n] I[n]   signed / unsigned integer of n bytes (default 4, at most 32)
//!   f d         float (4), double (8)
//!   c[n]        n bytes of a string (default 1); pack: c0 = the whole string; unpack: c0 = as
//!               many bytes as the value unpacked just before says
//!   s           a zero-terminated string
//!   x           one byte of padding
//!   ' '         ignored
//! ```
//!
//! Errors are raised as Redis's C library raises them, Lua strings with the caller's position
//! (`user_script:1: bad argument #2 to 'pack' (number expected, got nil)`, `user_script:1:
//! integral size 40 is larger than limit of 32`, ...): a script's `pcall` gets the message.
//!
//! The functions are C functions on Lua's C API (like `redis.call`): the work is done in Rust on
//! the arguments read in place; what it produced (values or the error) is kept in a thread-local
//! and pushed after the Rust frame owns nothing, so that a Lua memory error may unwind it.

use std::borrow::Cow;
use std::cell::RefCell;

use mlua::ffi;

/// Lua 5.1's limit of values on a C function's stack (`LUAI_MAXCSTACK`): `struct.unpack` fails
/// as Lua does past it.
const MAX_C_STACK: usize = 8000;
/// Largest `i`/`I` size.
const MAX_INT_SIZE: usize = 32;
/// `!` without a number: the alignment of a double on this machine.
const MAX_ALIGN: usize = 8;

/// One argument as the C function received it.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// A number.
    Num(f64),
    /// A string.
    Str(&'a [u8]),
    /// Anything else, by Lua's type name (`nil`, `boolean`, `table`, ...).
    Other(&'static str),
}

/// One value `unpack` returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A number.
    Num(f64),
    /// A string.
    Bytes(Vec<u8>),
}

/// A failure as Lua raises it: `(0, message)` for `luaL_error` (the caller's position goes
/// before the message), `(n, message)` for `luaL_argerror` on argument n (which adds
/// `bad argument #n to '<name the caller used>'`).
pub type Fail = (usize, String);

fn plain(msg: impl Into<String>) -> Fail {
    (0, msg.into())
}

fn arg_error(i: usize, msg: &str) -> Fail {
    (i, msg.to_string())
}

fn type_error(args: &[Arg<'_>], i: usize, expected: &str) -> Fail {
    let got = match args.get(i - 1) {
        None => "no value",
        Some(Arg::Num(_)) => "number",
        Some(Arg::Str(_)) => "string",
        Some(Arg::Other(t)) => t,
    };
    arg_error(i, &format!("{expected} expected, got {got}"))
}

/// A string as Lua 5.1 reads it as a number (`lua_tonumber`): decimal or `0x` hex, blanks
/// around allowed.
pub fn str_to_number(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    let t = s.trim_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        let v = u64::from_str_radix(hex, 16).ok()? as f64;
        return Some(if neg { -v } else { v });
    }
    if t.is_empty() || t.contains('_') {
        return None;
    }
    t.parse().ok()
}

fn check_number(args: &[Arg<'_>], i: usize) -> Result<f64, Fail> {
    match args.get(i - 1) {
        Some(Arg::Num(n)) => Ok(*n),
        Some(Arg::Str(s)) => str_to_number(s).ok_or_else(|| type_error(args, i, "number")),
        _ => Err(type_error(args, i, "number")),
    }
}

fn check_string<'a>(args: &[Arg<'a>], i: usize) -> Result<Cow<'a, [u8]>, Fail> {
    match args.get(i - 1) {
        Some(Arg::Str(s)) => Ok(Cow::Borrowed(s)),
        Some(Arg::Num(n)) => Ok(Cow::Owned(super::cjson::format_g(*n, 14).into_bytes())),
        _ => Err(type_error(args, i, "string")),
    }
}

/// The format as C reads it: up to its first zero byte.
fn format_arg<'a>(args: &[Arg<'a>]) -> Result<Cow<'a, [u8]>, Fail> {
    let f = check_string(args, 1)?;
    Ok(match f.iter().position(|&b| b == 0) {
        Some(end) => match f {
            Cow::Borrowed(b) => Cow::Borrowed(&b[..end]),
            Cow::Owned(mut v) => {
                v.truncate(end);
                Cow::Owned(v)
            }
        },
        None => f,
    })
}

/// Reads a format's options one at a time, with the endianness and alignment they set.
struct Format<'f> {
    fmt: &'f [u8],
    at: usize,
    little: bool,
    align: usize,
}

impl<'f> Format<'f> {
    fn new(fmt: &'f [u8]) -> Self {
        Format {
            fmt,
            at: 0,
            little: true,
            align: 1,
        }
    }

    /// The digits after an option, or `default`.
    fn number(&mut self, default: usize) -> Result<usize, Fail> {
        if !self.fmt.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(&d) = self.fmt.get(self.at).filter(|d| d.is_ascii_digit()) {
            let d = i32::from(d - b'0');
            a = a
                .checked_mul(10)
                .and_then(|a| a.checked_add(d))
                .ok_or_else(|| plain("integral size overflow"))?;
            self.at += 1;
        }
        Ok(a as usize)
    }

    /// The next option and its size (0 for those that have none).
    fn next(&mut self) -> Option<Result<(u8, usize), Fail>> {
        let opt = *self.fmt.get(self.at)?;
        self.at += 1;
        let size = match opt {
            b'b' | b'B' => Ok(1),
            b'h' | b'H' => Ok(2),
            b'l' | b'L' | b'T' | b'd' => Ok(8),
            b'f' => Ok(4),
            b'x' => Ok(1),
            b'c' => self.number(1),
            b'i' | b'I' => self.number(4).and_then(|n| {
                if n > MAX_INT_SIZE {
                    Err(plain(format!(
                        "integral size {n} is larger than limit of {MAX_INT_SIZE}"
                    )))
                } else {
                    Ok(n)
                }
            }),
            _ => Ok(0),
        };
        Some(size.map(|s| (opt, s)))
    }

    /// Padding before an option of `size` at offset `len`.
    fn padding(&self, len: usize, opt: u8, size: usize) -> usize {
        if size == 0 || opt == b'c' {
            return 0;
        }
        let size = size.min(self.align);
        size.wrapping_sub(len & size.wrapping_sub(1)) & size.wrapping_sub(1)
    }

    /// Endianness, alignment and blanks; any other option is invalid.
    fn control(&mut self, opt: u8) -> Result<(), Fail> {
        match opt {
            b' ' => {}
            b'>' => self.little = false,
            b'<' => self.little = true,
            b'!' => {
                let a = self.number(MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(plain(format!("alignment {a} is not a power of 2")));
                }
                self.align = a;
            }
            other => {
                return Err(arg_error(
                    1,
                    &format!("invalid format option '{}'", other as char),
                ));
            }
        }
        Ok(())
    }
}

/// `struct.pack(fmt, ...)`.
///
/// # Errors
/// Lua's error message.
pub fn pack(args: &[Arg<'_>]) -> Result<Vec<u8>, Fail> {
    let fmt = format_arg(args)?;
    // Lua's struct marks the end of the arguments with a nil on its stack: a missing value is
    // reported as that nil.
    let mut marked = Vec::with_capacity(args.len() + 1);
    marked.extend_from_slice(args);
    marked.push(Arg::Other("nil"));
    let args = &marked[..];
    let mut f = Format::new(&fmt);
    let mut out = Vec::new();
    let mut arg = 2;
    while let Some(next) = f.next() {
        let (opt, mut size) = next?;
        let pad = f.padding(out.len(), opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(args, arg)?;
                arg += 1;
                let mut v: u64 = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                let start = out.len();
                for _ in 0..size {
                    out.push((v & 0xff) as u8);
                    v = v.checked_shr(8).unwrap_or(0);
                }
                if !f.little {
                    out[start..].reverse();
                }
            }
            b'x' => out.push(0),
            b'f' | b'd' => {
                let n = check_number(args, arg)?;
                arg += 1;
                let start = out.len();
                if opt == b'f' {
                    out.extend_from_slice(&(n as f32).to_le_bytes());
                } else {
                    out.extend_from_slice(&n.to_le_bytes());
                }
                if !f.little {
                    out[start..].reverse();
                }
            }
            b'c' | b's' => {
                let s = check_string(args, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // (Lua's struct names the argument after this one.)
                    return Err(arg_error(arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(opt)?,
        }
    }
    Ok(out)
}

/// `struct.unpack(fmt, data [, pos])`: the values, then the position after them (1-based).
///
/// # Errors
/// Lua's error message.
pub fn unpack(args: &[Arg<'_>]) -> Result<Vec<Out>, Fail> {
    let fmt = format_arg(args)?;
    let data = check_string(args, 2)?;
    let ld = data.len();
    let pos = match args.get(2) {
        None | Some(Arg::Other("nil")) => 1,
        Some(_) => check_number(args, 3)? as i64,
    };
    if pos == 0 {
        return Err(arg_error(3, "offset must be 1 or greater"));
    }
    // As C's size_t: a position below 1 wraps around and is past any data.
    let mut pos = (pos as u64).wrapping_sub(1) as usize;
    let mut f = Format::new(&fmt);
    let mut out: Vec<Out> = Vec::new();
    let too_short = || arg_error(2, "data string too short");
    while let Some(next) = f.next() {
        let (opt, mut size) = next?;
        pos = pos.wrapping_add(f.padding(pos, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        if args.len() + out.len() + 2 > MAX_C_STACK {
            return Err(plain("stack overflow (too many results)"));
        }
        let bytes = |size: usize| &data[pos..pos + size];
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let b = bytes(size);
                let mut v: u64 = 0;
                let mut add = |byte: u8| v = (v << 8) | u64::from(byte);
                if f.little {
                    b.iter().rev().for_each(|&x| add(x));
                } else {
                    b.iter().for_each(|&x| add(x));
                }
                let n = if opt.is_ascii_lowercase() {
                    // Sign extension from the top bit of the size read (for sizes past 8 bytes
                    // the shift wraps modulo 64, as the C shift does on this machine).
                    let shift = ((size as i64) * 8 - 1).rem_euclid(64) as u32;
                    let mask = u64::MAX << shift;
                    if v & mask != 0 {
                        v |= mask;
                    }
                    v as i64 as f64
                } else {
                    v as f64
                };
                out.push(Out::Num(n));
            }
            b'x' => {}
            b'f' => {
                let mut b: [u8; 4] = bytes(4).try_into().unwrap_or_default();
                if !f.little {
                    b.reverse();
                }
                out.push(Out::Num(f64::from(f32::from_le_bytes(b))));
            }
            b'd' => {
                let mut b: [u8; 8] = bytes(8).try_into().unwrap_or_default();
                if !f.little {
                    b.reverse();
                }
                out.push(Out::Num(f64::from_le_bytes(b)));
            }
            b'c' => {
                if size == 0 {
                    let prev = match out.last() {
                        Some(Out::Num(n)) => Some(*n),
                        Some(Out::Bytes(s)) => str_to_number(s),
                        None => None,
                    };
                    let Some(n) = prev else {
                        return Err(plain("format 'c0' needs a previous size"));
                    };
                    out.pop();
                    size = if n < 0.0 {
                        n as i64 as usize
                    } else {
                        n as usize
                    };
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                out.push(Out::Bytes(bytes(size).to_vec()));
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(plain("unfinished string in data"));
                };
                out.push(Out::Bytes(data[pos..pos + len].to_vec()));
                size = len + 1;
            }
            _ => f.control(opt)?,
        }
        pos = pos.wrapping_add(size);
    }
    out.push(Out::Num(pos.wrapping_add(1) as i64 as f64));
    Ok(out)
}

/// `struct.size(fmt)`.
///
/// # Errors
/// Lua's error message.
pub fn size(args: &[Arg<'_>]) -> Result<usize, Fail> {
    let fmt = format_arg(args)?;
    let mut f = Format::new(&fmt);
    let mut pos: usize = 0;
    while let Some(next) = f.next() {
        let (opt, size) = next?;
        pos = pos.wrapping_add(f.padding(pos, opt, size));
        if opt == b's' {
            return Err(arg_error(1, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(1, "option 'c0' has no fixed size"));
        }
        // (Letters and digits that are no option count for nothing here.)
        if !opt.is_ascii_alphanumeric() {
            f.control(opt)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos)
}

/// Gives back what the last call kept (after a run).
pub fn release() {
    RESULT.with(|c| {
        if let Ok(mut r) = c.try_borrow_mut() {
            *r = Ok(Vec::new());
        }
    });
}

thread_local! {
    /// What the last call produced, pushed by its C function once the Rust work is over.
    static RESULT: RefCell<Result<Vec<Out>, Fail>> = const { RefCell::new(Ok(Vec::new())) };
}

/// Reads the C function's arguments in place (no conversion, hence no allocation or error).
///
/// # Safety
/// `l` is the state of a running C function; the slices live while the arguments stay on its
/// stack.
unsafe fn read_args<'a>(l: *mut ffi::lua_State) -> Vec<Arg<'a>> {
    // SAFETY: the caller's contract.
    unsafe {
        let n = ffi::lua_gettop(l).max(0);
        (1..=n)
            .map(|i| match ffi::lua_type(l, i) {
                ffi::LUA_TNUMBER => Arg::Num(ffi::lua_tonumber(l, i)),
                ffi::LUA_TSTRING => {
                    let mut len = 0usize;
                    let p = ffi::lua_tolstring(l, i, &mut len);
                    Arg::Str(std::slice::from_raw_parts(p.cast::<u8>(), len))
                }
                ffi::LUA_TNIL => Arg::Other("nil"),
                ffi::LUA_TBOOLEAN => Arg::Other("boolean"),
                ffi::LUA_TTABLE => Arg::Other("table"),
                ffi::LUA_TFUNCTION => Arg::Other("function"),
                ffi::LUA_TTHREAD => Arg::Other("thread"),
                _ => Arg::Other("userdata"),
            })
            .collect()
    }
}

/// Runs `f` on the arguments, keeps what it gave in [`RESULT`], then pushes it (or raises the
/// error message).
///
/// # Safety
/// Called from a C function Lua calls, with `l` its state.
unsafe fn run(
    l: *mut ffi::lua_State,
    f: fn(&[Arg<'_>]) -> Result<Vec<Out>, Fail>,
) -> std::ffi::c_int {
    // SAFETY: the arguments stay on the stack until the closure returns.
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let args = unsafe { read_args(l) };
        let r = f(&args);
        RESULT.with(|c| *c.borrow_mut() = r);
    }));
    if done.is_err() {
        RESULT.with(|c| *c.borrow_mut() = Err(plain("struct: internal error")));
    }
    // SAFETY: nothing of this frame needs dropping from here on; the result is read through a
    // raw pointer (no borrow outlives a longjmp) and only replaced by the next call.
    unsafe {
        let r = RESULT.with(|c| c.as_ptr().cast_const());
        ffi::lua_settop(l, 0);
        match &*r {
            Err((arg, msg)) => {
                // As luaL_error and luaL_argerror word it: the position of the caller (the
                // script's line), the argument and the name the caller called the function by.
                ffi::lua_pushlstring(l, msg.as_ptr().cast(), msg.len());
                if *arg > 0 {
                    let text = ffi::lua_tolstring(l, -1, std::ptr::null_mut());
                    ffi::luaL_argerror(l, *arg as i32, text);
                }
                ffi::luaL_where(l, 1);
                ffi::lua_insert(l, -2);
                ffi::lua_concat(l, 2);
                ffi::lua_error(l)
            }
            Ok(values) => {
                if ffi::lua_checkstack(l, values.len() as i32 + 1) == 0 {
                    ffi::lua_pushstring(l, c"stack overflow (too many results)".as_ptr());
                    ffi::lua_error(l);
                }
                for v in values {
                    match v {
                        Out::Num(n) => ffi::lua_pushnumber(l, *n),
                        Out::Bytes(b) => {
                            ffi::lua_pushlstring(l, b.as_ptr().cast(), b.len());
                        }
                    }
                }
                values.len() as std::ffi::c_int
            }
        }
    }
}

unsafe extern "C-unwind" fn c_pack(l: *mut ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by Lua.
    unsafe { run(l, |a| pack(a).map(|b| vec![Out::Bytes(b)])) }
}

unsafe extern "C-unwind" fn c_unpack(l: *mut ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by Lua.
    unsafe { run(l, unpack) }
}

unsafe extern "C-unwind" fn c_size(l: *mut ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by Lua.
    unsafe { run(l, |a| size(a).map(|n| vec![Out::Num(n as f64)])) }
}

/// The `struct` table.
///
/// # Errors
/// Lua allocation failures.
pub fn module(lua: &mlua::Lua) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    // SAFETY: the three follow the C API's protocol (see `run`).
    unsafe {
        t.raw_set("pack", lua.create_c_function(c_pack)?)?;
        t.raw_set("unpack", lua.create_c_function(c_unpack)?)?;
        t.raw_set("size", lua.create_c_function(c_size)?)?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(b: &[u8]) -> Arg<'_> {
        Arg::Str(b)
    }

    #[test]
    fn pack_and_unpack_round_trip() {
        let packed = pack(&[
            s(b">i2<I4 c3 s"),
            Arg::Num(-2.0),
            Arg::Num(7.0),
            s(b"abc"),
            s(b"z"),
        ])
        .unwrap();
        assert_eq!(packed, b"\xff\xfe\x07\0\0\0abcz\0");
        let back = unpack(&[s(b">i2<I4 c3 s"), s(&packed)]).unwrap();
        assert_eq!(
            back,
            vec![
                Out::Num(-2.0),
                Out::Num(7.0),
                Out::Bytes(b"abc".to_vec()),
                Out::Bytes(b"z".to_vec()),
                Out::Num(12.0)
            ]
        );
    }

    #[test]
    fn alignment_pads() {
        assert_eq!(size(&[s(b"!4 b i")]).unwrap(), 8);
        assert_eq!(size(&[s(b"b i")]).unwrap(), 5);
        assert_eq!(size(&[s(b"!bd")]).unwrap(), 16);
    }

    #[test]
    fn bad_formats_are_errors() {
        let msg = |r: Result<usize, Fail>| r.unwrap_err();
        assert_eq!(
            msg(size(&[s(b"i33")])),
            plain("integral size 33 is larger than limit of 32")
        );
        assert_eq!(
            pack(&[s(b"i99999999999")]).unwrap_err(),
            plain("integral size overflow")
        );
        assert_eq!(
            pack(&[s(b"!3")]).unwrap_err(),
            plain("alignment 3 is not a power of 2")
        );
        assert_eq!(
            pack(&[s(b"y")]).unwrap_err(),
            arg_error(1, "invalid format option 'y'")
        );
        assert_eq!(
            pack(&[s(b"i")]).unwrap_err(),
            arg_error(2, "number expected, got nil")
        );
        assert_eq!(
            unpack(&[s(b"i"), s(b"ab")]).unwrap_err(),
            arg_error(2, "data string too short")
        );
        assert_eq!(
            unpack(&[s(b"c0"), s(b"ab")]).unwrap_err(),
            plain("format 'c0' needs a previous size")
        );
    }
}
