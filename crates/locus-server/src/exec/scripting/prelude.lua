-- Locus's scripting prelude: runs once in every new Lua VM, before any user code, with the
-- real global table as its environment and the `debug` library still loaded. It builds Redis 7's
-- `redis` API on top of the Rust primitives in `hidden`, makes every global and every library
-- table read-only (proxies whose writes fail), installs the error handler that adds the user
-- script's source and line to an error, and removes what scripts must not reach (`debug`,
-- `print`, `dofile`, `loadfile`, binary chunks).
--
-- `hidden` (the chunk's argument) holds the Rust side:
--   hidden.c_call(...), hidden.c_pcall(...)  redis.call and redis.pcall (C functions)
--   hidden.sha1hex(s)     -> hex digest
--   hidden.log(level, s)  -> nothing
--   hidden.setresp(n)     -> nothing
--   hidden.known(name)    -> whether the command exists (redis.acl_check_cmd)
--   hidden.lib(name)      -> the library `name` (bit, cjson, cmsgpack, struct), built on first use
--   hidden.lazy           the names hidden.lib builds
-- and receives from here:
--   hidden.globals        the read-only proxy that becomes the thread's global table
--   hidden.run(f)         xpcall of an EVAL body with the error handler (KEYS, ARGV set by Rust)
--   hidden.runf(f, k, a)  the same for a function called with (KEYS, ARGV)
-- A run allocates only what the script needs (KEYS, ARGV, its own values): no closure per run.
local hidden = ...
local real = _G
local error, type, tostring, select, rawset, rawget, setmetatable, getmetatable, xpcall, pcall =
    error, type, tostring, select, rawset, rawget, setmetatable, getmetatable, xpcall, pcall
local floor = math.floor
local getinfo = debug.getinfo
local loadstring, load, concat = loadstring, load, table.concat
local find, sub, byte = string.find, string.sub, string.byte

local function err_table(msg)
  return { err = msg }
end

-- Redis's rule for an error string: "-CODE message" or "CODE message" keeps its code, a string
-- without a space becomes "ERR string"; trailing line breaks go.
local function error_text(s)
  if sub(s, 1, 1) == '-' then s = sub(s, 2) end
  local sp = find(s, ' ', 1, true)
  local code, msg
  if sp then
    code, msg = sub(s, 1, sp - 1), sub(s, sp + 1)
  else
    code, msg = 'ERR', s
  end
  msg = (msg:gsub('[\r\n]+$', ''))
  return code .. ' ' .. msg
end

local redis = {}

-- redis.call and redis.pcall are C functions (hidden.c_call, hidden.c_pcall; vm.rs): a Lua
-- wrapper would be tail-called by `return redis.call(...)` and the user's frame, whose line the
-- error names, would be gone. They read their arguments on the Lua stack and push the reply
-- with Lua's C API; redis.call raises an error reply as the error table itself.
redis.call = hidden.c_call
redis.pcall = hidden.c_pcall

redis.error_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return err_table('ERR wrong number or type of arguments')
  end
  return err_table(error_text(s))
end

redis.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return err_table('ERR wrong number or type of arguments')
  end
  return { ok = s }
end

redis.sha1hex = function(...)
  if select('#', ...) ~= 1 then error(err_table('ERR wrong number of arguments')) end
  return hidden.sha1hex((...))
end

redis.log = function(...)
  local n = select('#', ...)
  local level = ...
  if n < 2 then error(err_table('ERR redis.log() requires two arguments or more.')) end
  if type(level) ~= 'number' and not (type(level) == 'string' and tonumber(level)) then
    error(err_table('ERR First argument must be a number (log level).'))
  end
  level = floor(tonumber(level))
  if level < 0 or level > 3 then error(err_table('ERR Invalid debug level.')) end
  local parts = {}
  for i = 2, n do
    local v = select(i, ...)
    if type(v) == 'string' or type(v) == 'number' then parts[#parts + 1] = tostring(v) end
  end
  hidden.log(level, concat(parts, ' '))
end

redis.setresp = function(...)
  if select('#', ...) ~= 1 then error(err_table('ERR redis.setresp() requires one argument.')) end
  local n = tonumber((...))
  if n ~= 2 and n ~= 3 then error(err_table('ERR RESP version must be 2 or 3.')) end
  hidden.setresp(n)
end

redis.set_repl = function(...)
  if select('#', ...) ~= 1 then error(err_table('ERR redis.set_repl() requires two arguments.')) end
  local f = tonumber((...)) or 0
  if f ~= floor(f) or f < 0 or f > 3 then
    error(err_table('ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.'))
  end
end

redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end

redis.acl_check_cmd = function(...)
  if select('#', ...) == 0 then
    error(err_table('ERR Please specify at least one argument for this redis lib call'))
  end
  local name = ...
  if type(name) ~= 'string' or not hidden.known(name) then
    error(err_table('ERR Invalid command passed to redis.acl_check_cmd()'))
  end
  return true
end

redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REDIS_VERSION = hidden.version
redis.REDIS_VERSION_NUM = hidden.version_num

-- The message handler of every run: an error that is not already a table becomes
-- {err = 'ERR ' .. message}; the first frame that is the user's code (not C, not this prelude)
-- gives `source` and `line`.
local function handler(e)
  local level, info = 2, getinfo(2, 'Sl')
  while info and (info.what == 'C' or info.source == '=locus') do
    level = level + 1
    info = getinfo(level, 'Sl')
  end
  if type(e) ~= 'table' then e = { err = 'ERR ' .. tostring(e) } end
  if info then
    rawset(e, 'source', info.source)
    rawset(e, 'line', info.currentline)
  end
  return e
end

-- An EVAL body; KEYS and ARGV are set (and cleared after) in the real globals by the caller
-- with the C API (mod.rs), whose names stay interned here.
hidden.names = { 'KEYS', 'ARGV' }
hidden.run = function(f)
  local ok, v = xpcall(f, handler)
  return ok, v
end

-- xpcall passes no arguments in Lua 5.1: the function and its (KEYS, ARGV) wait in upvalues of
-- one closure made here, not in a new closure per call.
local cur_f, cur_keys, cur_args
local function call_current()
  return cur_f(cur_keys, cur_args)
end
hidden.runf = function(f, keys, args)
  cur_f, cur_keys, cur_args = f, keys, args
  local ok, v = xpcall(call_current, handler)
  cur_f, cur_keys, cur_args = nil, nil, nil
  return ok, v
end

-- Read-only tables. A protected table is an empty proxy whose reads go to the real table and
-- whose writes fail; rawset and setmetatable refuse proxies; the metatable a script can get
-- is itself a proxy.
local readonly = setmetatable({}, { __mode = 'k' })
-- As a metamethod (a write to a protected table) the error names the user's line; from the
-- rawset/setmetatable wrappers it has no position, as Redis's C check has none.
local function deny()
  error('Attempt to modify a readonly table', 2)
end
local function deny_here()
  error('Attempt to modify a readonly table', 0)
end
local function protect(t)
  local proxy, meta_view = {}, {}
  local mt = { __index = t, __newindex = deny }
  setmetatable(meta_view, { __index = mt, __newindex = deny, __metatable = meta_view })
  mt.__metatable = meta_view
  setmetatable(proxy, mt)
  readonly[proxy], readonly[meta_view] = true, true
  return proxy, mt
end

local function no_binary(s)
  if type(s) == 'string' and byte(s, 1) == 27 then
    return nil, 'binary chunks are not allowed'
  end
  return s
end

real.rawset = function(t, k, v)
  if readonly[t] then deny_here() end
  return rawset(t, k, v)
end
real.setmetatable = function(t, m)
  if readonly[t] then deny_here() end
  return setmetatable(t, m)
end
real.loadstring = function(s, name)
  local ok, e = no_binary(s)
  if not ok then return nil, e end
  return loadstring(s, name)
end
real.load = function(f, name)
  local pieces = {}
  while true do
    local p = f()
    if p == nil or p == '' then break end
    if type(p) ~= 'string' then return nil, 'reader function must return a string' end
    pieces[#pieces + 1] = p
  end
  local s = concat(pieces)
  local ok, e = no_binary(s)
  if not ok then return nil, e end
  return loadstring(s, name)
end

real.debug, real.print, real.dofile, real.loadfile, real.module, real.require, real.package =
    nil, nil, nil, nil, nil, nil, nil

real.redis = redis
for _, name in pairs({ 'redis', 'string', 'math', 'table', 'coroutine', 'cjson', 'bit', 'cmsgpack', 'struct' }) do
  local lib = rawget(real, name)
  if type(lib) == 'table' then rawset(real, name, (protect(lib))) end
end

-- Reading an undefined global is an error (Redis 7), writing any global too. The libraries
-- of hidden.lazy are built, protected and kept on their first read (a script cannot tell: the
-- globals it sees are a proxy, whose pairs() and rawget() show nothing either way).
local lazy = hidden.lazy
setmetatable(real, {
  __index = function(_, k)
    if lazy[k] then
      local lib = (protect(hidden.lib(k)))
      rawset(real, k, lib)
      lazy[k] = nil
      return lib
    end
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end,
})
local globals, globals_mt = protect(real)
rawset(real, '_G', globals)
hidden.globals = globals

-- FUNCTION LOAD: while a library's code runs, `redis` is the load-time API (register_function,
-- log, the constants); the functions it registers keep the same global table and see the full
-- API when FCALL runs them (the proxy's __index is switched, as Redis switches its globals').
local known_flags = {
  ['no-writes'] = true, ['allow-oom'] = true, ['allow-stale'] = true,
  ['no-cluster'] = true, ['allow-cross-slot-keys'] = true,
}
local lower = string.lower
local load_redis = {
  log = redis.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = hidden.version, REDIS_VERSION_NUM = hidden.version_num,
}
local function reg_error(msg) error(err_table('ERR ' .. msg)) end
load_redis.register_function = function(...)
  local pending = hidden.pending
  if pending == nil then reg_error('redis.register_function can only be called on FUNCTION LOAD command') end
  local n = select('#', ...)
  if n < 1 or n > 2 then reg_error('wrong number of arguments to redis.register_function') end
  local name, callback, desc, flags = nil, nil, nil, {}
  if n == 1 then
    local t = ...
    if type(t) ~= 'table' then
      reg_error('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
    end
    for k, v in pairs(t) do
      if type(k) ~= 'string' then reg_error('named argument key given to redis.register_function is not a string') end
      local lk = lower(k)
      if lk == 'function_name' then
        if type(v) ~= 'string' and type(v) ~= 'number' then
          reg_error('function_name argument given to redis.register_function must be a string')
        end
        name = tostring(v)
      elseif lk == 'description' then
        if type(v) ~= 'string' and type(v) ~= 'number' then
          reg_error('description argument given to redis.register_function must be a string')
        end
        desc = tostring(v)
      elseif lk == 'callback' then
        if type(v) ~= 'function' then reg_error('callback argument given to redis.register_function must be a function') end
        callback = v
      elseif lk == 'flags' then
        if type(v) ~= 'table' then
          reg_error('flags argument to redis.register_function must be a table representing function flags')
        end
        local i = 1
        while v[i] ~= nil do
          local f = v[i]
          if type(f) ~= 'string' or not known_flags[lower(f)] then reg_error('unknown flag given') end
          flags[#flags + 1] = lower(f)
          i = i + 1
        end
      else
        reg_error('unknown argument given to redis.register_function')
      end
    end
    if name == nil then reg_error('redis.register_function must get a function name argument') end
    if callback == nil then reg_error('redis.register_function must get a callback argument') end
  else
    local a, b = ...
    if type(a) ~= 'string' and type(a) ~= 'number' then
      reg_error('first argument to redis.register_function must be a string')
    end
    if type(b) ~= 'function' then reg_error('second argument to redis.register_function must be a function') end
    name, callback = tostring(a), b
  end
  if not find(name, '^[%w_]+$') then
    reg_error('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
  end
  for i = 1, #pending do
    if lower(pending[i].name) == lower(name) then reg_error('Function already exists in the library') end
  end
  pending[#pending + 1] = { name = name, callback = callback, description = desc, flags = flags }
end
-- At load time only `redis` (this API) exists: any other global, and any other field of
-- `redis`, is an error (a library registers functions; it runs nothing else).
local function strict(t)
  return setmetatable(t, {
    __index = function(_, k)
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end,
  })
end
local load_api = strict({ redis = (protect(strict(load_redis))) })

hidden.load_library = function(f)
  hidden.pending = {}
  globals_mt.__index = load_api
  local ok, e = xpcall(f, handler)
  globals_mt.__index = real
  local pending = hidden.pending
  hidden.pending = nil
  return ok, e, pending
end
