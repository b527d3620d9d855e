//! Redis 7's functions, per tenant: `FUNCTION LOAD|LIST|DELETE|FLUSH|DUMP|RESTORE|STATS|KILL|
//! HELP`, `FCALL`, `FCALL_RO`.
//!
//! A library is Lua code whose first line is `#!lua name=<library>`; running it registers
//! functions with `redis.register_function` (prelude.lua's load-time API). The libraries live
//! in the tenant's VM beside its EVAL scripts; FUNCTION FLUSH clears only the libraries, SCRIPT
//! FLUSH only the scripts, and neither touches another tenant.
//!
//! FUNCTION DUMP writes Redis's payload (what its RDB keeps for a library: opcode 245, the code
//! as an RDB string, then the RDB version and a CRC-64), so a dump moves between Locus and Redis.

use std::collections::BTreeMap;

use mlua::{Function, Table, Value};

use super::vm::{ScriptFlags, TenantVm};
use super::{Run, run_script, take_vm};
use crate::exec::{Args, CmdError, CmdResult, Ctx, int_arg, is, lower};

/// One registered function.
pub struct FunctionInfo {
    /// Its name.
    pub name: String,
    /// `description`, if given.
    pub description: Option<String>,
    /// Its flags.
    pub flags: ScriptFlags,
    /// The flag names as registered (FUNCTION LIST).
    pub flag_names: Vec<String>,
    /// The callback.
    pub func: Function,
}

/// A loaded library.
pub struct Library {
    /// The whole code, shebang included (FUNCTION LIST WITHCODE, DUMP).
    pub code: Vec<u8>,
    /// Its functions, by name.
    pub functions: BTreeMap<String, FunctionInfo>,
}

/// A tenant's libraries.
#[derive(Default)]
pub struct Libraries {
    /// By library name.
    pub libs: BTreeMap<String, Library>,
    /// Function name, lowercase (function names are case-insensitive, as in Redis) → library
    /// name.
    pub index: BTreeMap<String, String>,
}

impl Libraries {
    /// Number of functions.
    pub fn functions(&self) -> usize {
        self.index.len()
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Parses the `#!<engine> name=<lib>` line: (engine, library name, offset of the line feed).
fn metadata(code: &[u8]) -> Result<(String, String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let words = super::vm::split_args(&code[..end]).unwrap_or_default();
    let words: Vec<String> = words
        .iter()
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let mut parts = words.iter().map(String::as_str);
    let Some(first) = parts.next() else {
        return Err("Invalid library metadata".into());
    };
    let engine = first.get(2..).unwrap_or("").to_string();
    let mut name: Option<String> = None;
    for p in parts {
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case("name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(p[5..].to_string());
            continue;
        }
        return Err(format!("Invalid metadata value given: {p}"));
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    Ok((engine, name, end))
}

/// Loads `code` as a library into `vm` (replacing one of the same name only if `replace`).
/// Returns the library name.
///
/// # Errors
/// Redis's wording, `ERR ` included.
pub fn load_library(
    vm: &mut TenantVm,
    busy: &super::busy::Busy,
    code: &[u8],
    replace: bool,
) -> Result<String, CmdError> {
    let loaded = compile_and_register(vm, busy, code, replace);
    // A load leaves its compile's garbage (and a replaced library): collected as a run's is.
    vm.collect_garbage(false);
    loaded
}

fn compile_and_register(
    vm: &mut TenantVm,
    busy: &super::busy::Busy,
    code: &[u8],
    replace: bool,
) -> Result<String, CmdError> {
    let err = |m: String| CmdError::msg(format!("ERR {m}"));
    let (engine, name, end) = metadata(code).map_err(err)?;
    if !valid_name(&name) {
        return Err(err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into()));
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(err(format!("Engine '{engine}' not found")));
    }
    if vm.libraries.libs.contains_key(&name) && !replace {
        return Err(err(format!("Library '{name}' already exists")));
    }
    let chunk = vm
        .lua
        .load(&code[end..])
        .set_name("@user_function")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .into_function()
        .map_err(|e| match e {
            mlua::Error::SyntaxError { message, .. } => {
                err(format!("Error compiling function: {message}"))
            }
            other => err(format!("Error compiling function: {other}")),
        })?;
    busy.start_load();
    let loaded: mlua::Result<(bool, Value, Value)> = vm.load_library.call(chunk);
    busy.end_load();
    vm.after_run();
    let (ok, e, pending) = loaded.map_err(|e| err(format!("Error registering functions: {e}")))?;
    if !ok {
        let msg = match &e {
            Value::Table(t) => t
                .raw_get::<Option<String>>("err")
                .ok()
                .flatten()
                .unwrap_or_else(|| "ERR unknown error".into()),
            Value::String(s) => format!("ERR {}", s.to_string_lossy()),
            _ => "ERR execution failure".into(),
        };
        let msg = match msg.strip_prefix("ERR runtime error: ") {
            Some(rest) => format!("ERR {rest}"),
            None => msg,
        };
        return Err(err(format!("Error registering functions: {msg}")));
    }
    let Value::Table(pending) = pending else {
        return Err(err("No functions registered".into()));
    };
    let mut functions = BTreeMap::new();
    for entry in pending.sequence_values::<Table>() {
        let entry = entry.map_err(|e| err(e.to_string()))?;
        let fname: String = entry.raw_get("name").map_err(|e| err(e.to_string()))?;
        let func: Function = entry.raw_get("callback").map_err(|e| err(e.to_string()))?;
        let description: Option<String> = entry.raw_get("description").unwrap_or(None);
        let flag_names: Vec<String> = entry
            .raw_get::<Table>("flags")
            .map(|t| {
                t.sequence_values::<String>()
                    .filter_map(Result::ok)
                    .collect()
            })
            .unwrap_or_default();
        let mut flags = ScriptFlags::default();
        ScriptFlags::parse_list(&flag_names.join(","), &mut flags)
            .map_err(|_| err("Error registering functions: ERR unknown flag given".into()))?;
        functions.insert(
            fname.clone(),
            FunctionInfo {
                name: fname,
                description,
                flags,
                flag_names,
                func,
            },
        );
    }
    if functions.is_empty() {
        return Err(err("No functions registered".into()));
    }
    for f in functions.keys() {
        if let Some(owner) = vm.libraries.index.get(&f.to_ascii_lowercase())
            && *owner != name
        {
            return Err(err(format!("Function {f} already exists")));
        }
    }
    if let Some(old) = vm.libraries.libs.remove(&name) {
        for f in old.functions.keys() {
            vm.libraries.index.remove(&f.to_ascii_lowercase());
        }
    }
    for f in functions.keys() {
        vm.libraries
            .index
            .insert(f.to_ascii_lowercase(), name.clone());
    }
    vm.libraries.libs.insert(
        name.clone(),
        Library {
            code: code.to_vec(),
            functions,
        },
    );
    Ok(name)
}

/// `FCALL function numkeys [key ...] [arg ...]`
pub fn fcall(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    fcall_generic(ctx, a, false)
}

/// `FCALL_RO function numkeys [key ...] [arg ...]`
pub fn fcall_ro(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    fcall_generic(ctx, a, true)
}

fn fcall_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, ro: bool) -> CmdResult {
    let t = ctx.t()?;
    let mut taken = take_vm(ctx, t)?;
    let vm = taken.vm();
    let fname = String::from_utf8_lossy(&a[1]).into_owned();
    let Some(f) = vm
        .libraries
        .index
        .get(&fname.to_ascii_lowercase())
        .and_then(|lib| vm.libraries.libs.get(lib))
        .and_then(|lib| {
            lib.functions
                .values()
                .find(|f| f.name.eq_ignore_ascii_case(&fname))
        })
    else {
        return Err(CmdError::msg("ERR Function not found"));
    };
    let (func, flags, registered) = (f.func.clone(), f.flags, f.name.clone());
    let numkeys = int_arg(&a[2]).map_err(|_| CmdError::msg("ERR Bad number of keys provided"))?;
    if numkeys > (a.len() - 3) as i64 {
        return Err(CmdError::msg(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if numkeys < 0 {
        return Err(CmdError::msg("ERR Number of keys can't be negative"));
    }
    if ro && !flags.no_writes {
        return Err(CmdError::msg(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    let n = numkeys as usize;
    let run = Run {
        read_only: ro || flags.no_writes,
        tenant: t,
        name: fname,
    };
    let (libraries, functions) = (vm.libraries.libs.len(), vm.libraries.functions());
    let busy = ctx.shared().scripts().busy();
    busy.set_running_function(t, &registered, a, libraries, functions);
    let result = run_script(ctx, vm, &run, &func, &a[3..3 + n], &a[3 + n..], true);
    ctx.shared().scripts().busy().clear_running_function();
    result
}

/// `FUNCTION <subcommand> ...`
pub fn function(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let arity = |ok: bool| crate::exec::admin::sub_arity(ok, "function", &sub);
    match sub.as_str() {
        "load" => {
            arity(a.len() >= 3)?;
            let mut replace = false;
            let mut i = 2;
            while i < a.len() - 1 {
                if is(&a[i], "replace") {
                    replace = true;
                    i += 1;
                    continue;
                }
                return Err(CmdError::msg(format!(
                    "ERR Unknown option given: {}",
                    String::from_utf8_lossy(&a[i])
                )));
            }
            if i >= a.len() {
                return Err(CmdError::msg("ERR Function code is missing"));
            }
            let t = ctx.t()?;
            let mut taken = take_vm(ctx, t)?;
            let busy = ctx.shared().scripts().busy();
            let name = load_library(taken.vm(), busy, &a[i], replace)?;
            drop(taken);
            ctx.shared().snapshots().note_write();
            ctx.w.bulk(name.as_bytes());
        }
        "delete" => {
            arity(a.len() == 3)?;
            let t = ctx.t()?;
            let mut taken = take_vm(ctx, t)?;
            let vm = taken.vm();
            let name = String::from_utf8_lossy(&a[2]).into_owned();
            let Some(lib) = vm.libraries.libs.remove(&name) else {
                return Err(CmdError::msg("ERR Library not found"));
            };
            for f in lib.functions.keys() {
                vm.libraries.index.remove(&f.to_ascii_lowercase());
            }
            drop(taken);
            ctx.shared().snapshots().note_write();
            ctx.w.ok();
        }
        "flush" => {
            if a.len() > 3 {
                return Err(super::syntax_error("function", &sub));
            }
            if a.len() == 3 && !is(&a[2], "async") && !is(&a[2], "sync") {
                return Err(CmdError::msg(
                    "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
                ));
            }
            let t = ctx.t()?;
            let mut taken = take_vm(ctx, t)?;
            taken.vm().libraries = Libraries::default();
            drop(taken);
            ctx.shared().snapshots().note_write();
            ctx.w.ok();
        }
        "list" => list(ctx, a)?,
        "stats" => {
            arity(a.len() == 2)?;
            let t = ctx.t()?;
            let mut taken = take_vm(ctx, t)?;
            let (libs, funcs) = {
                let l = &taken.vm().libraries;
                (l.libs.len(), l.functions())
            };
            drop(taken);
            ctx.w.map(2);
            ctx.w.bulk(b"running_script");
            ctx.w.null();
            ctx.w.bulk(b"engines");
            ctx.w.map(1);
            ctx.w.bulk(b"LUA");
            ctx.w.map(2);
            ctx.w.bulk(b"libraries_count");
            ctx.w.integer(libs as i64);
            ctx.w.bulk(b"functions_count");
            ctx.w.integer(funcs as i64);
        }
        "kill" => {
            arity(a.len() == 2)?;
            // A running function holds the engine lock this command needs: none runs now.
            return Err(CmdError::msg("NOTBUSY No scripts in execution right now."));
        }
        "dump" => {
            arity(a.len() == 2)?;
            let t = ctx.t()?;
            let mut taken = take_vm(ctx, t)?;
            let payload = dump(&taken.vm().libraries);
            drop(taken);
            ctx.w.bulk(&payload);
        }
        "restore" => {
            arity(a.len() >= 3)?;
            if a.len() > 4 {
                return Err(super::syntax_error("function", &sub));
            }
            let policy = match a.get(3) {
                None => Policy::Append,
                Some(p) if is(p, "append") => Policy::Append,
                Some(p) if is(p, "replace") => Policy::Replace,
                Some(p) if is(p, "flush") => Policy::Flush,
                Some(_) => {
                    return Err(CmdError::msg(
                        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
                    ));
                }
            };
            let codes = undump(&a[2])?;
            let t = ctx.t()?;
            let mut taken = take_vm(ctx, t)?;
            restore(taken.vm(), ctx.shared().scripts().busy(), &codes, policy)?;
            drop(taken);
            ctx.shared().snapshots().note_write();
            ctx.w.ok();
        }
        "help" => {
            let lines = [
                "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "LOAD [REPLACE] <FUNCTION CODE>",
                "    Create a new library with the given library name and code.",
                "DELETE <LIBRARY NAME>",
                "    Delete the given library.",
                "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
                "    Return general information on all the libraries:",
                "    * Library name",
                "    * The engine used to run the Library",
                "    * Library description",
                "    * Functions list",
                "    * Library code (if WITHCODE is given)",
                "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
                "STATS",
                "    Return information about the current function running:",
                "    * Function name",
                "    * Command used to run the function",
                "    * Duration in MS that the function is running",
                "    If no function is running, return nil",
                "    In addition, returns a list of available engines.",
                "KILL",
                "    Kill the current running function.",
                "FLUSH [ASYNC|SYNC]",
                "    Delete all the libraries.",
                "    When called without the optional mode argument, the behavior is determined by the",
                "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
                "    * ASYNC: Asynchronously flush the libraries.",
                "    * SYNC: Synchronously flush the libraries.",
                "DUMP",
                "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
                "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
                "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
                "    control how to handle existing libraries (default APPEND):",
                "    * FLUSH: delete all existing libraries.",
                "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
                "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
                "      libraries with the new libraries (notice that even on this option there is a chance of failure",
                "      in case of functions name collision with another library).",
                "HELP",
                "    Print this help.",
            ];
            crate::exec::admin::help(ctx, &lines);
        }
        _ => return Err(crate::exec::admin::unknown_sub("function", &a[1])),
    }
    Ok(())
}

fn list(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<Vec<u8>> = None;
    let mut i = 2;
    while i < a.len() {
        if is(&a[i], "withcode") && !with_code {
            with_code = true;
            i += 1;
        } else if is(&a[i], "libraryname") && pattern.is_none() {
            if i + 1 >= a.len() {
                return Err(CmdError::msg("ERR library name argument was not given"));
            }
            pattern = Some(a[i + 1].to_vec());
            i += 2;
        } else {
            return Err(CmdError::msg(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(&a[i])
            )));
        }
    }
    let t = ctx.t()?;
    let mut taken = take_vm(ctx, t)?;
    let libs = &taken.vm().libraries.libs;
    let chosen: Vec<(&String, &Library)> = libs
        .iter()
        .filter(|(n, _)| {
            pattern
                .as_deref()
                .is_none_or(|p| crate::glob::glob_match(p, n.as_bytes(), false))
        })
        .collect();
    let mut out = Vec::new();
    {
        let mut w = locus_protocol::ReplyWriter::new(&mut out, ctx.w.proto());
        w.array(chosen.len());
        for (name, lib) in chosen {
            w.map(if with_code { 4 } else { 3 });
            w.bulk(b"library_name");
            w.bulk(name.as_bytes());
            w.bulk(b"engine");
            w.bulk(b"LUA");
            w.bulk(b"functions");
            w.array(lib.functions.len());
            for f in lib.functions.values() {
                w.map(3);
                w.bulk(b"name");
                w.bulk(f.name.as_bytes());
                w.bulk(b"description");
                match &f.description {
                    Some(d) => w.bulk(d.as_bytes()),
                    None => w.null(),
                }
                w.bulk(b"flags");
                w.set(f.flag_names.len());
                for fl in &f.flag_names {
                    w.bulk(fl.as_bytes());
                }
            }
            if with_code {
                w.bulk(b"library_code");
                w.bulk(&lib.code);
            }
        }
    }
    drop(taken);
    ctx.w.raw(&out);
    Ok(())
}

// ------------------------------------------------------------------- DUMP / RESTORE payload

/// RDB opcode of a function library (Redis 7.0's `RDB_OPCODE_FUNCTION2`).
const RDB_OPCODE_FUNCTION2: u8 = 245;
/// RDB version Redis 7.0 writes (and the newest a payload may carry).
const RDB_VERSION: u16 = 10;

/// Redis's DUMP payload of every library.
pub fn dump(libs: &Libraries) -> Vec<u8> {
    let mut out = Vec::new();
    for lib in libs.libs.values() {
        out.push(RDB_OPCODE_FUNCTION2);
        rdb_string(&mut out, &lib.code);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64_jones(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The library codes of a payload.
///
/// # Errors
/// Redis's wording for a bad payload.
pub fn undump(p: &[u8]) -> Result<Vec<Vec<u8>>, CmdError> {
    let bad = || CmdError::msg("ERR DUMP payload version or checksum are wrong");
    if p.len() < 10 {
        return Err(bad());
    }
    let (body, footer) = p.split_at(p.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..10].try_into().map_err(|_| bad())?);
    if version > RDB_VERSION || crc64_jones(0, &p[..p.len() - 8]) != crc {
        return Err(bad());
    }
    let mut codes = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        if body[pos] != RDB_OPCODE_FUNCTION2 {
            return Err(CmdError::msg("ERR given type is not a function"));
        }
        pos += 1;
        let (s, used) = read_rdb_string(&body[pos..])
            .ok_or_else(|| CmdError::msg("ERR failed loading the given functions payload"))?;
        codes.push(s);
        pos += used;
    }
    Ok(codes)
}

#[derive(Clone, Copy, PartialEq)]
enum Policy {
    Append,
    Replace,
    Flush,
}

fn restore(
    vm: &mut TenantVm,
    busy: &super::busy::Busy,
    codes: &[Vec<u8>],
    policy: Policy,
) -> CmdResult {
    // The payload's libraries load into an empty set first: a bad one aborts the restore with the
    // existing libraries untouched.
    let old = std::mem::take(&mut vm.libraries);
    for code in codes {
        if let Err(e) = load_library(vm, busy, code, false) {
            vm.libraries = old;
            return Err(e);
        }
    }
    let new = std::mem::take(&mut vm.libraries);
    if policy == Policy::Flush {
        vm.libraries = new;
        return Ok(());
    }
    for (name, lib) in &new.libs {
        if old.libs.contains_key(name) && policy == Policy::Append {
            vm.libraries = old;
            return Err(CmdError::msg(format!("ERR Library {name} already exists")));
        }
        for f in lib.functions.keys() {
            // A function of an existing library that is not replaced by one of the same name.
            if let Some(owner) = old.index.get(&f.to_ascii_lowercase())
                && (policy == Policy::Append || !new.libs.contains_key(owner))
            {
                let msg = format!("ERR Function {f} already exists");
                vm.libraries = old;
                return Err(CmdError::msg(msg));
            }
        }
    }
    let mut merged = old;
    for (name, lib) in new.libs {
        if let Some(replaced) = merged.libs.remove(&name) {
            for f in replaced.functions.keys() {
                merged.index.remove(&f.to_ascii_lowercase());
            }
        }
        for f in lib.functions.keys() {
            merged.index.insert(f.to_ascii_lowercase(), name.clone());
        }
        merged.libs.insert(name, lib);
    }
    vm.libraries = merged;
    Ok(())
}

fn rdb_string(out: &mut Vec<u8>, s: &[u8]) {
    let n = s.len();
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u32::MAX as usize {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn read_rdb_string(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let first = *b.first()?;
    let (len, hdr): (usize, usize) = match first >> 6 {
        0 => (usize::from(first & 0x3f), 1),
        1 => (
            (usize::from(first & 0x3f) << 8) | usize::from(*b.get(1)?),
            2,
        ),
        2 if first == 0x80 => (
            u32::from_be_bytes(b.get(1..5)?.try_into().ok()?) as usize,
            5,
        ),
        2 if first == 0x81 => (
            usize::try_from(u64::from_be_bytes(b.get(1..9)?.try_into().ok()?)).ok()?,
            9,
        ),
        // Integer- or LZF-encoded strings: Redis never writes library code that way.
        _ => return None,
    };
    let s = b.get(hdr..hdr.checked_add(len)?)?;
    Some((s.to_vec(), hdr + len))
}

/// CRC-64 with the Jones polynomial (reflected 0xad93d23594c935a9), as Redis's DUMP payloads.
pub fn crc64_jones(mut crc: u64, data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5; // 0xad93d23594c935a9 bit-reversed
    for &byte in data {
        crc ^= u64::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_check_value() {
        // Redis's crc64 test vector.
        assert_eq!(crc64_jones(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn metadata_rules() {
        assert_eq!(metadata(b"#!lua name=lib\ncode").unwrap().1, "lib");
        assert_eq!(
            metadata(b"return 1").unwrap_err(),
            "Missing library metadata"
        );
        assert_eq!(
            metadata(b"#!lua name=x").unwrap_err(),
            "Invalid library metadata"
        );
        assert_eq!(
            metadata(b"#!lua foo=bar\n").unwrap_err(),
            "Invalid metadata value given: foo=bar"
        );
        assert_eq!(
            metadata(b"#!lua name=a name=b\n").unwrap_err(),
            "Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(
            metadata(b"#!lua\n").unwrap_err(),
            "Library name was not given"
        );
    }

    #[test]
    fn rdb_strings_round_trip() {
        for n in [0usize, 63, 64, 16383, 16384, 70000] {
            let s = vec![b'x'; n];
            let mut out = Vec::new();
            rdb_string(&mut out, &s);
            assert_eq!(read_rdb_string(&out), Some((s, out.len())));
        }
    }
}
