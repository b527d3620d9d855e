//! One tenant's Lua 5.1 VM: the sandbox, Redis's `redis` API, the compiled scripts (the script
//! cache) and the memory cap.
//!
//! ```text
//!   TenantVm
//!   ├── lua: Lua 5.1 state (mlua, vendored), allocations capped at `LUA_MEMORY_CAP`
//!   ├── real globals: the libraries, `redis`, KEYS/ARGV (set per call, raw)
//!   │     └── the thread's global table is a read-only proxy of it (prelude.lua)
//!   ├── hidden: the Rust primitives the prelude wraps (redis.call, a C function, reaches the
//!   │     running command through `super::CURRENT`)
//!   └── scripts: sha1 hex → (body, compiled function, shebang flags)
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};

/// Most bytes one tenant's Lua VM may allocate: past it an allocation fails and the script gets
/// `ERR Error running script ..., not enough memory` (Lua's own memory error), the server runs on.
pub const LUA_MEMORY_CAP: usize = 256 << 20;

/// The Redis version scripts see (`redis.REDIS_VERSION`), as INFO's `redis_version`.
pub const REDIS_VERSION: &str = "7.0.15";
const REDIS_VERSION_NUM: i64 = 0x0007_000f;

/// Shebang flags (`#!lua flags=...`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// No shebang: Redis's compatibility mode (no flag checks before the run).
    pub compat: bool,
    /// `no-writes`.
    pub no_writes: bool,
    /// `allow-oom`.
    pub allow_oom: bool,
    /// `allow-stale`.
    pub allow_stale: bool,
    /// `no-cluster`.
    pub no_cluster: bool,
    /// `allow-cross-slot-keys`.
    pub allow_cross_slot: bool,
}

impl ScriptFlags {
    /// Parses a comma-separated flag list (`no-writes,allow-oom`).
    ///
    /// # Errors
    /// The first unknown flag.
    pub fn parse_list(list: &str, into: &mut ScriptFlags) -> Result<(), String> {
        if list.is_empty() {
            return Ok(());
        }
        for f in list.split(',') {
            match f {
                "no-writes" => into.no_writes = true,
                "allow-oom" => into.allow_oom = true,
                "allow-stale" => into.allow_stale = true,
                "no-cluster" => into.no_cluster = true,
                "allow-cross-slot-keys" => into.allow_cross_slot = true,
                other => return Err(other.to_string()),
            }
        }
        Ok(())
    }
}

/// Splits an EVAL body's shebang line off: the flags, and the offset where Lua code starts (the
/// line feed is kept so that line numbers stay the user's).
///
/// # Errors
/// Redis's wording (without the `ERR ` prefix).
pub fn shebang(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((
            ScriptFlags {
                compat: true,
                ..ScriptFlags::default()
            },
            0,
        ));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let words = split_args(&body[..end]).unwrap_or_default();
    let words: Vec<String> = words
        .iter()
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let mut parts = words.iter().map(String::as_str);
    let Some(engine) = parts.next() else {
        return Err("Invalid engine in script shebang".into());
    };
    if engine != "#!lua" {
        return Err(format!("Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags::default();
    for p in parts {
        if let Some(list) = p.strip_prefix("flags=") {
            ScriptFlags::parse_list(list, &mut flags)
                .map_err(|f| format!("Unexpected flag in script shebang: {f}"))?;
        } else {
            return Err(format!("Unknown lua shebang option: {p}"));
        }
    }
    Ok((flags, end))
}

/// Splits a shebang line into words as Redis's `sdssplitargs` does: blanks separate words,
/// `"..."` (with `\n`, `\r`, `\t`, `\b`, `\a`, `\xHH` escapes) and `'...'` quote within a
/// word. `None` for unbalanced quotes or a closing quote not followed by a blank.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Some(words);
        }
        let mut w = Vec::new();
        let (mut dq, mut sq) = (false, false);
        loop {
            let Some(&c) = line.get(i) else {
                if dq || sq {
                    return None;
                }
                break;
            };
            if dq {
                if c == b'\\' && i + 3 < line.len() && line[i + 1] == b'x' {
                    let hex = std::str::from_utf8(&line[i + 2..i + 4]).ok();
                    if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                        w.push(b);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    w.push(match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                    i += 2;
                    continue;
                }
                if c == b'"' {
                    if line.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return None;
                    }
                    i += 1;
                    break;
                }
                w.push(c);
            } else if sq {
                if c == b'\\' && line.get(i + 1) == Some(&b'\'') {
                    w.push(b'\'');
                    i += 2;
                    continue;
                }
                if c == b'\'' {
                    if line.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return None;
                    }
                    i += 1;
                    break;
                }
                w.push(c);
            } else if c.is_ascii_whitespace() {
                break;
            } else if c == b'"' {
                dq = true;
            } else if c == b'\'' {
                sq = true;
            } else {
                w.push(c);
            }
            i += 1;
        }
        words.push(w);
    }
}

/// A compiled script of the cache.
pub struct Script {
    /// The body as given to EVAL / SCRIPT LOAD.
    pub body: Vec<u8>,
    /// The compiled body.
    pub func: Function,
    /// Its shebang flags.
    pub flags: ScriptFlags,
}

/// A tenant's Lua VM with its script cache.
pub struct TenantVm {
    /// The scripts by lowercase sha1 hex.
    pub scripts: HashMap<String, Script>,
    /// The Rust primitives the prelude wraps.
    pub hidden: Table,
    /// The real global table (KEYS and ARGV are set in it).
    pub real: Table,
    /// `hidden.run`.
    pub run: Function,
    /// `hidden.runf`.
    pub runf: Function,
    /// The RESP version `redis.setresp` chose in the current run (2 or 3).
    pub resp: Arc<AtomicU8>,
    /// Bytes of script bodies held (INFO `used_memory_scripts_eval`).
    pub body_bytes: usize,
    /// Bytes in use after the last full garbage collection (see [`TenantVm::collect_garbage`]).
    pub gc_base: usize,
    /// The function libraries (FUNCTION, FCALL).
    pub libraries: super::function::Libraries,
    /// `hidden.load_library`.
    pub load_library: Function,
    /// The running script's state, which the hook checks.
    busy: Arc<super::busy::Busy>,
    /// The VM (dropped last: the handles above point into it).
    pub lua: Lua,
}

/// Sets the hook that checks the clock and SCRIPT KILL every `every` instructions (Redis: every
/// 100,000). Once a check fails (a kill, a library's load past its limit) the hook is set again
/// to fire at every instruction, so the error is raised again right after any `pcall` that
/// caught it and the script ends whatever it catches (Redis re-arms its hook per line for the
/// same reason); [`TenantVm::after_run`] puts the sparse hook back.
fn install_hook(lua: &Lua, busy: Arc<super::busy::Busy>, every: u32) -> mlua::Result<()> {
    lua.set_hook(
        mlua::HookTriggers::new().every_nth_instruction(every),
        move |lua, _| match busy.check() {
            Some(msg) => {
                if every > 1 && !busy.swap_hook_armed(true) {
                    // mlua clones the running callback before calling it, so replacing it here
                    // frees nothing that runs.
                    install_hook(lua, busy.clone(), 1)?;
                }
                Err(mlua::Error::runtime(msg))
            }
            None => Ok(mlua::VmState::Continue),
        },
    )
}

impl TenantVm {
    /// After a script or a library's load: the sparse hook again if a failed check had set the
    /// per-instruction one.
    pub fn after_run(&self) {
        if self.busy.swap_hook_armed(false) {
            // Setting a hook allocates its callback; if even that fails, the per-instruction
            // hook stays and only costs time, and the next run tries again.
            if install_hook(&self.lua, self.busy.clone(), super::busy::HOOK_EVERY).is_err() {
                self.busy.swap_hook_armed(true);
            }
        }
    }

    /// A new VM: the libraries Redis loads, the `redis` API, read-only globals.
    ///
    /// # Errors
    /// Lua failures while building (out of memory).
    pub fn new(busy: Arc<super::busy::Busy>) -> mlua::Result<TenantVm> {
        // SAFETY: `debug` is an unsafe library (it can break Rust's invariants through
        // getinfo/setlocal on mlua's frames). The prelude keeps only `debug.getinfo` for its
        // error handler and removes the library from the globals before any user code runs.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::new(),
            )
        };
        lua.set_memory_limit(LUA_MEMORY_CAP)?;
        install_hook(&lua, busy.clone(), super::busy::HOOK_EVERY)?;
        let real = lua.globals();
        let hidden = lua.create_table()?;
        hidden.raw_set(
            "lib",
            lua.create_function(|lua, name: String| super::libs::build(lua, &name))?,
        )?;
        let lazy = lua.create_table()?;
        for name in super::libs::LAZY {
            lazy.raw_set(name, true)?;
        }
        hidden.raw_set("lazy", lazy)?;
        let resp = Arc::new(AtomicU8::new(2));
        hidden.raw_set(
            "sha1hex",
            lua.create_function(|lua, v: Value| {
                let bytes = match &v {
                    Value::String(s) => s.as_bytes().to_vec(),
                    Value::Integer(i) => i.to_string().into_bytes(),
                    Value::Number(n) => super::convert::number_arg(*n),
                    _ => Vec::new(),
                };
                lua.create_string(sha1_hex(&bytes))
            })?,
        )?;
        hidden.raw_set(
            "log",
            lua.create_function(|_, (level, msg): (i64, mlua::LuaString)| {
                // Warnings go to the server's log (stderr); lower levels are dropped, as in a
                // Redis whose loglevel is `warning`.
                if level >= 3 {
                    eprintln!("lua: {}", String::from_utf8_lossy(&msg.as_bytes()));
                }
                Ok(())
            })?,
        )?;
        let r = resp.clone();
        hidden.raw_set(
            "setresp",
            lua.create_function(move |_, n: u8| {
                r.store(n, Ordering::Relaxed);
                Ok(())
            })?,
        )?;
        hidden.raw_set(
            "known",
            lua.create_function(|_, name: mlua::LuaString| {
                Ok(crate::exec::lookup(&name.as_bytes()).is_some())
            })?,
        )?;
        // SAFETY: `redis_call` and `redis_pcall` follow the Lua C API's protocol (see
        // `call_and_push`).
        hidden.raw_set("c_call", unsafe { lua.create_c_function(redis_call)? })?;
        hidden.raw_set("c_pcall", unsafe { lua.create_c_function(redis_pcall)? })?;
        hidden.raw_set("version", REDIS_VERSION)?;
        hidden.raw_set("version_num", REDIS_VERSION_NUM)?;
        lua.load(include_str!("prelude.lua"))
            .set_name("=locus")
            .call::<()>(hidden.clone())?;
        let globals: Table = hidden.raw_get("globals")?;
        lua.set_globals(globals)?;
        let run: Function = hidden.raw_get("run")?;
        let runf: Function = hidden.raw_get("runf")?;
        let load_library: Function = hidden.raw_get("load_library")?;
        let mut vm = TenantVm {
            scripts: HashMap::new(),
            hidden,
            real,
            run,
            runf,
            resp,
            body_bytes: 0,
            gc_base: 0,
            libraries: super::function::Libraries::default(),
            load_library,
            busy,
            lua,
        };
        // The prelude's compiled top level and its temporaries (about a quarter of a new VM's
        // bytes) are garbage now.
        vm.collect_garbage(true);
        Ok(vm)
    }

    /// Called after each run and each library load: a full collection once the VM has grown by
    /// a quarter of what it held after the last one (at least [`GC_SLACK`]), or when it nears
    /// its cap (Lua 5.1 has no emergency collection), or when `now`. The garbage a run leaves
    /// (KEYS, ARGV, replies, a loaded library's compile) is thus bounded by the slack, whatever
    /// the rate of runs, and a large live heap is not traversed more often than its size
    /// warrants (Lua's own incremental collector keeps running between these).
    pub fn collect_garbage(&mut self, now: bool) {
        let used = self.lua.used_memory();
        let slack = GC_SLACK.max(self.gc_base / 4);
        if now || used > self.gc_base + slack || used > LUA_MEMORY_CAP / 2 {
            let _ = self.lua.gc_collect();
            self.gc_base = self.lua.used_memory();
        }
    }

    /// Compiles `body` (its shebang already checked: Lua code starts at `code_from`) under the
    /// chunk name Redis uses, `@user_script`.
    ///
    /// # Errors
    /// Lua's compile error message.
    pub fn compile(&self, body: &[u8], code_from: usize) -> Result<Function, String> {
        self.lua
            .load(&body[code_from..])
            .set_name("@user_script")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .into_function()
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => message,
                mlua::Error::MemoryError(m) => m,
                other => other.to_string(),
            })
    }

    /// Bytes the VM has allocated.
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }
}

/// Least growth of a VM between two full collections (see [`TenantVm::collect_garbage`]): about
/// 90 runs of bench/evalsha_cpu.py's 3-command script (about 270 bytes of garbage each: KEYS,
/// ARGV, a reply string, the two C closures of `Lua::exec_raw`'s protection).
pub const GC_SLACK: usize = 24 << 10;

/// `redis.call`: an error reply is raised as the Lua error value itself (a table `{err=...}`),
/// which only the C API can do (an mlua callback's error would reach the script as a userdata).
/// Being a C function, a `return redis.call(...)` in a script is not a real tail call in Lua
/// 5.1, so the error handler still finds the script's line.
unsafe extern "C-unwind" fn redis_call(l: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by Lua as a C function.
    unsafe { call_and_push(l, true) }
}

/// `redis.pcall`: as `redis.call`, an error reply returned instead of raised.
unsafe extern "C-unwind" fn redis_pcall(l: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by Lua as a C function.
    unsafe { call_and_push(l, false) }
}

/// One `redis.call` / `redis.pcall` with Lua's C API only (no mlua callback, table or string
/// helper: under a memory limit each of those leaves two C closures of garbage, and their
/// protection costs more than the command): the command runs with its arguments read in place
/// on the stack ([`super::call_from_stack`], which owns and raises nothing), then its reply is
/// pushed from the thread's buffer ([`super::convert::push_resp`]) and, for `redis.call`, an
/// error reply raised.
///
/// # Safety
/// Called by Lua as a C function. Past `call_from_stack` this frame owns nothing to drop, so
/// that a Lua error (out of memory while pushing; the raise) may unwind it by longjmp; a panic
/// of the command is caught before it could unwind into Lua's C frames.
unsafe fn call_and_push(l: *mut mlua::ffi::lua_State, raise: bool) -> std::ffi::c_int {
    use mlua::ffi;
    // SAFETY: the stack holds the arguments only; see call_from_stack's contract.
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        super::call_from_stack(l)
    }));
    // SAFETY: call_from_stack has returned; the pushes below are the Lua API's own protocol,
    // with stack room checked by push_resp.
    unsafe {
        ffi::lua_settop(l, 0);
        // Every error reply in the buffer was counted when it was written (the command's own,
        // or why it was refused, as Redis's scriptCall counts both): each is marked
        // `ignore_error_stats_update`, so passing it on counts nothing more.
        let counted = match ran {
            Ok(_) => true,
            Err(_) => {
                ffi::lua_pushstring(l, c"ERR the command panicked (a Locus bug)".as_ptr());
                ffi::lua_error(l)
            }
        };
        let pushed = super::with_reply(|reply| {
            super::convert::push_resp(l, reply, 0, counted).map(|_| reply.first() == Some(&b'-'))
        });
        match pushed {
            Some(true) if raise => ffi::lua_error(l),
            Some(_) => 1,
            None => {
                ffi::lua_settop(l, 0);
                ffi::lua_pushstring(l, c"ERR reply nested too deeply or malformed".as_ptr());
                ffi::lua_error(l)
            }
        }
    }
}

/// Lowercase hex SHA-1, as `redis.sha1hex` and the script cache name scripts.
pub fn sha1_hex(b: &[u8]) -> String {
    sha1_smol::Sha1::from(b).digest().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_rules() {
        assert!(shebang(b"return 1").unwrap().0.compat);
        let (f, at) = shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(f.no_writes && f.allow_oom && !f.compat);
        assert_eq!(at, 31);
        assert_eq!(
            shebang(b"#!lua").unwrap_err(),
            "Invalid script shebang".to_string()
        );
        assert!(
            shebang(b"#!python\n")
                .unwrap_err()
                .contains("Unexpected engine")
        );
        assert!(
            shebang(b"#!lua flags=bad\n")
                .unwrap_err()
                .contains("Unexpected flag")
        );
        assert!(
            shebang(b"#!lua name=x\n")
                .unwrap_err()
                .contains("Unknown lua shebang option")
        );
    }

    #[test]
    fn sha1_of_empty() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }
}
