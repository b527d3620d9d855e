//! Lua scripting as Redis 7.0 runs it: `EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO` and `SCRIPT`,
//! inside the caller's tenant.
//!
//! ```text
//!   EVAL body numkeys k.. a..                      (engine lock held by the batch)
//!     │ take the tenant's TenantVm out of `Scripts` (created on first use)
//!     │ sha1(body) → cached function, or compile (shebang flags checked first)
//!     │ CURRENT = this Ctx and Run (redis.call, a C function made once per VM, finds them there)
//!     │ hidden.run(f, KEYS, ARGV) = xpcall(f, handler) ─► redis.call(...)   (vm.rs, Lua C API)
//!     │                                          │ arguments read in place on the Lua stack
//!     │                                          │ checks: arity, noscript, read-only, tenant
//!     │                                          │ dispatch_spec(inner Ctx, args)   (the same
//!     │                                          │   path a client's command takes: stats,
//!     │                                          │   WATCH, notifications, blocking wake-ups)
//!     │                                          └ reply bytes ─► Lua value (convert.rs, C API)
//!     │ result ─► RESP in the client's protocol (convert.rs)
//!     └ put the TenantVm back
//! ```
//!
//! Atomicity: a script runs under the engine lock its batch holds, so no other command of any
//! client interleaves with it (as in Redis). Known limit: the engine lock is one for all tenants
//! today, so another tenant waits while a script runs; with per-tenant shards a script will hold
//! only its tenant's shard.
//!
//! Tenancy: every VM and script cache belongs to one tenant; each command a script calls is
//! routed exactly as a client's command would be, and refused unless it lands in the script's
//! tenant (prefix tenancy: a key computed to match another tenant's prefix is an error, never a
//! read).

pub mod busy;
pub mod cjson;
pub mod cmsgpack;
pub mod convert;
pub mod function;
pub mod libs;
pub mod struct_lib;
pub mod vm;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use locus_engine::TenantId;
use locus_protocol::{ProtocolVersion, ReplyWriter};
use mlua::Value;
use parking_lot::Mutex;

use super::{Args, CmdError, CmdResult, Ctx, has_flag, int_arg, is, lookup, lower};
use vm::{Script, TenantVm, sha1_hex, shebang};

/// Every tenant's scripting state (in `Shared`).
#[derive(Default)]
pub struct Scripts {
    vms: Mutex<HashMap<TenantId, Box<TenantVm>>>,
    /// The running script, for other clients (BUSY, SCRIPT KILL) and the VMs' hooks.
    busy: std::sync::Arc<busy::Busy>,
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts").finish_non_exhaustive()
    }
}

/// What INFO shows about scripting, for one tenant or all.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScriptStats {
    /// Bytes the Lua VMs allocated.
    pub lua_bytes: usize,
    /// Cached EVAL scripts.
    pub scripts: usize,
    /// Bytes of their bodies.
    pub body_bytes: usize,
}

impl Scripts {
    /// INFO figures for `scope` (`None`: every tenant).
    pub fn stats(&self, scope: Option<Option<TenantId>>) -> ScriptStats {
        let vms = self.vms.lock();
        let mut s = ScriptStats::default();
        for (t, vm) in vms.iter() {
            if scope.is_some_and(|sc| sc != Some(*t)) {
                continue;
            }
            s.lua_bytes += vm.used_memory();
            s.scripts += vm.scripts.len();
            s.body_bytes += vm.body_bytes;
        }
        s
    }

    /// Whether tenant `t`'s cached script `sha` (or function `name`, when `function`) has the
    /// `no-writes` flag; `None` if unknown (or its VM is running a script now). CLIENT PAUSE
    /// WRITE reads it (exec/pause).
    pub fn no_writes(&self, t: TenantId, function: bool, name: &[u8]) -> Option<bool> {
        let vms = self.vms.lock();
        let vm = vms.get(&t)?;
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        if function {
            let lib = vm.libraries.index.get(&name)?;
            let f = vm
                .libraries
                .libs
                .get(lib)?
                .functions
                .values()
                .find(|f| f.name.eq_ignore_ascii_case(&name))?;
            Some(f.flags.no_writes)
        } else {
            vm.scripts.get(&name).map(|s| s.flags.no_writes)
        }
    }

    /// The running script's state.
    pub fn busy(&self) -> &busy::Busy {
        &self.busy
    }

    fn take(&self, t: TenantId) -> Result<Box<TenantVm>, CmdError> {
        if let Some(vm) = self.vms.lock().remove(&t) {
            return Ok(vm);
        }
        TenantVm::new(self.busy.clone())
            .map(Box::new)
            .map_err(|e| CmdError::msg(format!("ERR cannot create the Lua VM: {e}")))
    }

    fn put(&self, t: TenantId, vm: Box<TenantVm>) {
        self.vms.lock().insert(t, vm);
    }

    /// SCRIPT FLUSH: the tenant's EVAL scripts go and its Lua VM is replaced by a new one, as
    /// Redis replaces its scripting VM; the function libraries stay (reloaded from their code
    /// into the new VM, so that they run as before). A new VM also gives back what the old one
    /// keeps at its high-water mark after a collection: the Lua stacks a deep conversion or a
    /// large `unpack` grew, mlua's reference slots. If a library cannot be reloaded (the VM cap),
    /// the old VM stays with its scripts dropped.
    fn flush(&self, t: TenantId) {
        let Some(mut old) = self.vms.lock().remove(&t) else {
            return;
        };
        let fresh = TenantVm::new(self.busy.clone()).ok().and_then(|mut vm| {
            for lib in old.libraries.libs.values() {
                function::load_library(&mut vm, &self.busy, &lib.code, false).ok()?;
            }
            Some(vm)
        });
        let vm = match fresh {
            Some(vm) => Box::new(vm),
            None => {
                old.scripts.clear();
                old.body_bytes = 0;
                old.collect_garbage(true);
                old
            }
        };
        self.vms.lock().insert(t, vm);
    }
}

/// The VM is given back to `Scripts` however the command ends.
struct Taken<'s> {
    scripts: &'s Scripts,
    tenant: TenantId,
    vm: Option<Box<TenantVm>>,
}

impl Taken<'_> {
    fn vm(&mut self) -> &mut TenantVm {
        self.vm.as_mut().expect("present until drop")
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if let Some(vm) = self.vm.take() {
            self.scripts.put(self.tenant, vm);
        }
    }
}

fn take_vm<'s>(ctx: &Ctx<'s>, t: TenantId) -> Result<Taken<'s>, CmdError> {
    let scripts = ctx.shared().scripts();
    Ok(Taken {
        scripts,
        tenant: t,
        vm: Some(scripts.take(t)?),
    })
}

/// Compiles `body` into the cache (if new) and returns its sha.
fn load_script(vm: &mut TenantVm, body: &[u8]) -> Result<String, CmdError> {
    let sha = sha1_hex(body);
    if vm.scripts.contains_key(&sha) {
        return Ok(sha);
    }
    let (flags, from) = shebang(body).map_err(|e| CmdError::msg(format!("ERR {e}")))?;
    let func = vm
        .compile(body, from)
        .map_err(|e| CmdError::msg(format!("ERR Error compiling script (new function): {e}")))?;
    vm.body_bytes += body.len();
    vm.scripts.insert(
        sha.clone(),
        Script {
            body: body.to_vec(),
            func,
            flags,
        },
    );
    Ok(sha)
}

/// `EVAL script numkeys [key ...] [arg ...]`
pub fn eval(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    eval_generic(ctx, a, false, false)
}

/// `EVALSHA sha1 numkeys [key ...] [arg ...]`
pub fn evalsha(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    eval_generic(ctx, a, true, false)
}

/// `EVAL_RO script numkeys [key ...] [arg ...]`
pub fn eval_ro(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    eval_generic(ctx, a, false, true)
}

/// `EVALSHA_RO sha1 numkeys [key ...] [arg ...]`
pub fn evalsha_ro(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    eval_generic(ctx, a, true, true)
}

fn noscript() -> CmdError {
    CmdError::msg("NOSCRIPT No matching script. Please use EVAL.")
}

fn eval_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, by_sha: bool, ro: bool) -> CmdResult {
    let numkeys = int_arg(&a[2])?;
    if numkeys > (a.len() - 3) as i64 {
        return Err(CmdError::msg(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if numkeys < 0 {
        return Err(CmdError::msg("ERR Number of keys can't be negative"));
    }
    let t = ctx.t()?;
    if by_sha && a[1].len() != 40 {
        return Err(noscript());
    }
    let mut taken = take_vm(ctx, t)?;
    let vm = taken.vm();
    let sha = if by_sha {
        let Ok(sha) = std::str::from_utf8(&a[1]) else {
            return Err(noscript());
        };
        sha.to_ascii_lowercase()
    } else {
        load_script(vm, &a[1])?
    };
    let Some((func, flags)) = vm.scripts.get(&sha).map(|s| (s.func.clone(), s.flags)) else {
        return Err(noscript());
    };
    let keys = &a[3..3 + numkeys as usize];
    let argv = &a[3 + numkeys as usize..];
    let run = Run {
        read_only: ro || flags.no_writes,
        tenant: t,
        name: sha,
    };
    if !flags.compat && !flags.no_writes && ro {
        return Err(CmdError::msg(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    run_script(ctx, vm, &run, &func, keys, argv, false)
}

/// One run's settings.
pub(crate) struct Run {
    /// Writes are refused (`*_RO`, `no-writes`).
    pub read_only: bool,
    /// The caller's tenant.
    pub tenant: TenantId,
    /// The sha (EVAL) or function name (FCALL), for error messages.
    pub name: String,
}

fn lua_err(e: mlua::Error) -> CmdError {
    CmdError::msg(format!("ERR Error running script: {e}"))
}

/// Runs a compiled script (`as_function`: called with KEYS and ARGV as arguments, FCALL;
/// otherwise they are globals, EVAL) and writes its reply.
pub(crate) fn run_script(
    ctx: &mut Ctx<'_>,
    vm: &mut TenantVm,
    run: &Run,
    func: &mlua::Function,
    keys: Args<'_, '_>,
    argv: Args<'_, '_>,
    as_function: bool,
) -> CmdResult {
    // What a script may change on the connection and Redis keeps to the script: the database
    // (SELECT) and the protocol its calls see; blocking commands answer at once.
    let (db, tenant, proto, deny, script) = (
        ctx.conn.db,
        ctx.conn.tenant,
        ctx.conn.proto,
        ctx.conn.block.deny,
        ctx.conn.block.script,
    );
    ctx.conn.block.deny = true;
    ctx.conn.block.script = true;
    let busy = ctx.shared().scripts().busy();
    busy.start(as_function, ctx.tenant.or(ctx.conn.tenant));
    vm.resp.store(2, Ordering::Relaxed);
    let cell = RefCell::new(&mut *ctx);
    let result: mlua::Result<(bool, Value)> = {
        let current = Current {
            ctx: &cell,
            run,
            resp: &vm.resp,
        };
        let _set = CurrentGuard::set(&current);
        let runner = if as_function { &vm.runf } else { &vm.run };
        // One protected call builds KEYS and ARGV with Lua's C API and calls the runner: mlua's
        // table and string helpers would each leave two C closures of garbage under a memory
        // limit (their protection), about 1 KB a run. For EVAL they become the globals KEYS
        // and ARGV (set in the real global table, cleared after the run, so that a function
        // never sees an EVAL's); a function gets them as its arguments.
        // SAFETY: the closure only pushes values, sets fields of the real global table (no
        // metamethods: raw) and calls; a Lua error (out of memory) unwinds through it by
        // longjmp, and it owns nothing to drop. The stack has LUA_MINSTACK free slots; it uses
        // three at most beyond the three arguments.
        unsafe {
            vm.lua.exec_raw((&vm.real, runner, func), |state| {
                use mlua::ffi;
                let real = ffi::lua_gettop(state) - 2;
                if as_function {
                    push_array(state, keys);
                    push_array(state, argv);
                    ffi::lua_call(state, 3, 2);
                } else {
                    ffi::lua_pushstring(state, c"KEYS".as_ptr());
                    push_array(state, keys);
                    ffi::lua_rawset(state, real);
                    ffi::lua_pushstring(state, c"ARGV".as_ptr());
                    push_array(state, argv);
                    ffi::lua_rawset(state, real);
                    ffi::lua_call(state, 1, 2);
                    for name in [c"KEYS", c"ARGV"] {
                        ffi::lua_pushstring(state, name.as_ptr());
                        ffi::lua_pushnil(state);
                        ffi::lua_rawset(state, real);
                    }
                }
                ffi::lua_remove(state, real);
            })
        }
    };
    let resp3 = vm.resp.load(Ordering::Relaxed) == 3;
    let outcome: mlua::Result<(bool, Vec<u8>)> = result.map(|(ok, v)| {
        let mut out = Vec::new();
        let mut w = ReplyWriter::new(&mut out, proto);
        if ok {
            convert::lua_to_resp(&mut w, &v, resp3, 0);
        } else if busy.killed() {
            w.error(if as_function {
                busy::KILLED_FUNCTION
            } else {
                busy::KILLED_EVAL
            });
        } else if passed_on(&v) {
            // An uncaught `redis.call` error: counted when the command wrote it.
            w.error_uncounted(&raised_error(&v, &run.name));
        } else {
            w.error(&raised_error(&v, &run.name));
        }
        (ok, out)
    });
    busy.end();
    vm.after_run();
    let ctx = cell.into_inner();
    ctx.conn.db = db;
    ctx.conn.tenant = tenant;
    ctx.conn.proto = proto;
    ctx.conn.block.deny = deny;
    ctx.conn.block.script = script;
    vm.collect_garbage(false);
    shrink_reply();
    let (ok, out) = outcome.map_err(lua_err)?;
    if !ok || out.first() == Some(&b'-') {
        // A raised error, or an error table returned: the error line without its '-' and CRLF,
        // through the dispatcher (counted as failed; in errorstats it was counted, or not, as
        // it was written above).
        let text = String::from_utf8_lossy(&out[1..out.len().saturating_sub(2)]).into_owned();
        return Err(CmdError::Counted(text));
    }
    ctx.w.raw(&out);
    Ok(())
}

/// Pushes a Lua array of `items` (KEYS or ARGV) with the C API.
///
/// # Safety
/// Inside a protected call with two free stack slots.
unsafe fn push_array(state: *mut mlua::ffi::lua_State, items: Args<'_, '_>) {
    use mlua::ffi;
    // SAFETY: the caller's contract; the strings are copied by Lua.
    unsafe {
        ffi::lua_createtable(state, items.len().min(i32::MAX as usize) as i32, 0);
        for (i, item) in items.iter().enumerate() {
            ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
            ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
        }
    }
}

/// The command a script runs in, for `redis.call` (a C function made once per VM).
struct Current<'a, 'b, 'c> {
    ctx: &'a RefCell<&'b mut Ctx<'c>>,
    run: &'a Run,
    resp: &'a std::sync::atomic::AtomicU8,
}

thread_local! {
    /// The running script's [`Current`] on this thread, type-erased; null between runs. A
    /// script cannot start another (EVAL and FCALL are `noscript`), so runs never nest.
    static CURRENT: std::cell::Cell<*const ()> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Sets [`CURRENT`] for one run and clears it however the run ends.
struct CurrentGuard(*const ());

impl CurrentGuard {
    fn set(cur: &Current<'_, '_, '_>) -> CurrentGuard {
        let p = std::ptr::from_ref(cur).cast::<()>();
        let prev = CURRENT.with(|c| c.replace(p));
        CurrentGuard(prev)
    }
}

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

thread_local! {
    /// The reply of the running script's latest `redis.call`, written by [`call_from_stack`] and
    /// read by the C function that pushes it into Lua (vm.rs); kept between calls so that a
    /// call allocates nothing for it (shrunk after a run that grew it past [`REPLY_KEEP`]).
    static REPLY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Most bytes of reply buffer a thread keeps between runs.
const REPLY_KEEP: usize = 64 << 10;

/// `redis.call` / `redis.pcall`, first half: runs the command whose arguments are the Lua stack's
/// values 1..=top and writes its reply, or why it was refused (an error reply), into the
/// thread's reply buffer ([`with_reply`] reads it). Returns whether the reply is the command's
/// own (an error reply then gets `ignore_error_stats_update`, as in Redis).
///
/// Outside a run (a function a library kept and called at load time) the reply is an error.
///
/// # Safety
/// `l` is the state of a C function Lua is calling; its stack holds the call's arguments only.
/// Nothing here raises a Lua error (strings are read in place, numbers formatted in Rust), and
/// everything it owns is dropped when it returns, before the caller touches Lua again.
pub(crate) unsafe fn call_from_stack(l: *mut mlua::ffi::lua_State) -> bool {
    use mlua::ffi;
    REPLY.with(|r| {
        let mut buf = r.borrow_mut();
        buf.clear();
        let p = CURRENT.with(std::cell::Cell::get);
        if p.is_null() {
            error_reply(
                &mut buf,
                "ERR redis.call can only be used while a script or function runs",
            );
            return false;
        }
        // SAFETY: `p` was set by run_script from a `Current` that outlives the run (its guard
        // clears it before the `Current` goes), and this runs only inside that run, on this
        // thread.
        let cur = unsafe { &*p.cast::<Current<'_, '_, '_>>() };
        let Ok(mut c) = cur.ctx.try_borrow_mut() else {
            error_reply(&mut buf, "ERR redis.call reentered");
            return false;
        };
        // SAFETY: the caller's contract: a valid state whose stack holds the arguments.
        let n = unsafe { ffi::lua_gettop(l) }.max(0) as usize;
        let mut argv: Vec<Cow<'_, [u8]>> = Vec::with_capacity(n.min(1 << 16));
        for i in 1..=n as i32 {
            // SAFETY: `i` is a valid stack index. A string is read in place (no conversion, so
            // no allocation and no error); it stays on the stack, alive, until this returns.
            let arg = unsafe {
                match ffi::lua_type(l, i) {
                    ffi::LUA_TSTRING => {
                        let mut len = 0usize;
                        let ptr = ffi::lua_tolstring(l, i, &mut len);
                        Cow::Borrowed(std::slice::from_raw_parts(ptr.cast::<u8>(), len))
                    }
                    ffi::LUA_TNUMBER => Cow::Owned(convert::number_arg(ffi::lua_tonumber(l, i))),
                    _ => {
                        error_reply(
                            &mut buf,
                            "ERR Lua redis lib command arguments must be strings or integers",
                        );
                        return false;
                    }
                }
            };
            argv.push(arg);
        }
        let resp3 = cur.resp.load(Ordering::Relaxed) == 3;
        script_call(&mut c, cur.run, &argv, resp3, &mut buf)
    })
}

/// Runs `f` on the reply [`call_from_stack`] wrote, without holding a borrow of it: `f` may
/// raise a Lua error (longjmp), which must leave nothing borrowed behind.
///
/// # Safety
/// No [`call_from_stack`] runs while `f` does (runs never nest, and `f` calls no command).
pub(crate) unsafe fn with_reply<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    let (ptr, len) = REPLY.with(|r| {
        // SAFETY: no borrow of the cell is alive (call_from_stack has returned).
        let v = unsafe { &*r.as_ptr() };
        (v.as_ptr(), v.len())
    });
    // SAFETY: the buffer is not touched until the next call_from_stack, after `f`.
    f(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Gives back a reply buffer that a large reply grew, and what `struct` kept (after a run).
fn shrink_reply() {
    struct_lib::release();
    REPLY.with(|r| {
        if let Ok(mut b) = r.try_borrow_mut()
            && b.capacity() > REPLY_KEEP
        {
            *b = Vec::new();
        }
    });
}

fn error_reply(buf: &mut Vec<u8>, msg: &str) {
    ReplyWriter::new(buf, ProtocolVersion::Resp2).error(msg);
}

/// Whether an error value is a command's error reply passed on (Redis's
/// `ignore_error_stats_update`: `redis.call` / `redis.pcall` mark every error they return).
pub(crate) fn passed_on(v: &Value) -> bool {
    matches!(v, Value::Table(t)
        if matches!(t.raw_get::<Value>("ignore_error_stats_update"), Ok(Value::Boolean(true))))
}

/// The reply for an error a script raised: `{err=..., source=..., line=...}` from the handler,
/// or Lua's own message (out of memory: the handler does not run).
fn raised_error(v: &Value, name: &str) -> String {
    if let Value::Table(t) = v {
        let msg = match t.raw_get::<Value>("err") {
            Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => "ERR unknown error".to_string(),
        };
        // An error from a Rust library function (cjson, bit, ...) reaches the handler as mlua's
        // error value, whose text starts with its kind.
        let msg = match msg.strip_prefix("ERR runtime error: ") {
            Some(rest) => format!("ERR {rest}"),
            None => msg,
        };
        let source = t.raw_get::<Option<String>>("source").ok().flatten();
        let line = t.raw_get::<Option<i64>>("line").ok().flatten();
        match (source, line) {
            (Some(s), Some(l)) => format!("{msg} script: {name}, on {s}:{l}."),
            _ => msg,
        }
    } else {
        let msg = match v {
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => "execution failure".to_string(),
        };
        let msg: String = msg.chars().take(100).collect();
        format!("ERR Error running script {name}, {msg}")
    }
}

/// Commands a script may not call beyond Redis's `noscript` flag: they change the connection
/// (Redis runs scripts on a client of their own).
fn denied_in_script(name: &str) -> bool {
    matches!(
        name,
        "hello" | "auth" | "reset" | "quit" | "client" | "monitor"
    )
}

/// `redis.call` / `redis.pcall`: one command through the dispatcher, its reply (RESP2, or RESP3
/// when the script chose it) written to `buf`. Returns whether it ran (false: refused here,
/// `buf` holds why).
fn script_call(
    ctx: &mut Ctx<'_>,
    run: &Run,
    argv: Args<'_, '_>,
    resp3: bool,
    buf: &mut Vec<u8>,
) -> bool {
    let refuse = |buf: &mut Vec<u8>, msg: &str| {
        error_reply(buf, msg);
        false
    };
    if argv.is_empty() {
        return refuse(
            buf,
            "ERR Please specify at least one argument for this redis lib call",
        );
    }
    let Some(spec) = lookup(&argv[0]) else {
        return refuse(buf, "ERR Unknown Redis command called from script");
    };
    let argc = argv.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || (spec.arity < 0 && argc < -spec.arity) {
        return refuse(
            buf,
            "ERR Wrong number of args calling Redis command from script",
        );
    }
    if has_flag(spec.flags, "noscript")
        || denied_in_script(spec.name)
        || crate::exec::cluster::noscript_subcommand(spec.name, argv.get(1).map(|a| &a[..]))
    {
        return refuse(buf, "ERR This Redis command is not allowed from script");
    }
    if run.read_only && (spec.is_write || has_flag(spec.flags, "may_replicate")) {
        return refuse(
            buf,
            "ERR Write commands are not allowed from read-only scripts.",
        );
    }
    // The tenant boundary: the command must land in the script's tenant.
    if let Ok(Some(t)) = super::route(ctx, spec, argv)
        && t != run.tenant
    {
        return refuse(
            buf,
            "ERR Script attempted to access a key outside its tenant",
        );
    }
    let proto = if resp3 {
        ProtocolVersion::Resp3
    } else {
        ProtocolVersion::Resp2
    };
    let saved = ctx.conn.proto;
    ctx.conn.proto = proto;
    {
        let mut inner = Ctx {
            eng: &mut *ctx.eng,
            fx: ctx.fx,
            server: ctx.server,
            conn: &mut *ctx.conn,
            w: ReplyWriter::new(buf, proto),
            tenant: None,
        };
        super::monitor::in_script(|| super::dispatch_spec(&mut inner, argv, Some(spec)));
    }
    if spec.is_write {
        ctx.shared().scripts().busy().wrote();
    }
    ctx.conn.proto = saved;
    true
}

/// Redis's error for a subcommand given more arguments than it takes.
pub(crate) fn syntax_error(cmd: &str, sub: &str) -> CmdError {
    CmdError::msg(format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {} HELP.",
        cmd.to_ascii_uppercase()
    ))
}

/// `SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP`
pub fn script(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let arity = |ok: bool| crate::exec::admin::sub_arity(ok, "script", &sub);
    match sub.as_str() {
        "load" => {
            arity(a.len() == 3)?;
            let t = ctx.t()?;
            let mut taken = take_vm(ctx, t)?;
            let sha = load_script(taken.vm(), &a[2])?;
            drop(taken);
            ctx.w.bulk(sha.as_bytes());
        }
        "exists" => {
            arity(a.len() >= 3)?;
            let t = ctx.t()?;
            let vms = ctx.shared().scripts().vms.lock();
            let vm = vms.get(&t);
            ctx.w.array(a.len() - 2);
            for s in &a[2..] {
                let found = vm.is_some_and(|vm| vm.scripts.contains_key(&lower(s)));
                ctx.w.integer(i64::from(found));
            }
        }
        "flush" => {
            if a.len() > 3 {
                return Err(syntax_error("script", &sub));
            }
            if a.len() == 3 && !is(&a[2], "async") && !is(&a[2], "sync") {
                return Err(CmdError::msg(
                    "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
                ));
            }
            let t = ctx.t()?;
            ctx.shared().scripts().flush(t);
            ctx.w.ok();
        }
        "kill" => {
            arity(a.len() == 2)?;
            // A running script holds the engine lock this command needs: none runs now.
            return Err(CmdError::msg("NOTBUSY No scripts in execution right now."));
        }
        "debug" => {
            arity(a.len() == 3)?;
            return Err(CmdError::msg(
                "ERR SCRIPT DEBUG is not supported: Locus has no Lua debugger",
            ));
        }
        "help" => {
            let lines = [
                "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "EXISTS <sha1> [<sha1> ...]",
                "    Return information about the existence of the scripts in the script cache.",
                "FLUSH [ASYNC|SYNC]",
                "    Flush the Lua scripts cache. Very dangerous on replicas.",
                "    When called without the optional mode argument, the behavior is determined by the",
                "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
                "    * ASYNC: Asynchronously flush the scripts cache.",
                "    * SYNC: Synchronously flush the scripts cache.",
                "KILL",
                "    Kill the currently executing Lua script.",
                "LOAD <script>",
                "    Load a script into the scripts cache without executing it.",
                "HELP",
                "    Print this help.",
            ];
            crate::exec::admin::help(ctx, &lines);
        }
        _ => return Err(crate::exec::admin::unknown_sub("script", &a[1])),
    }
    Ok(())
}
