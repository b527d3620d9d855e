"""Lua scripting (EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT): replies, conversions both ways in
RESP2 and RESP3, errors and their wording, the sandbox (read-only globals and libraries), shebang
flags, MULTI and WATCH, INFO fields. Every assertion here runs against redis-server 7.0 too
(`--peer redis`); the tenant tests (per-tenant script cache, keys of another tenant) are Locus's."""

import hashlib
import re
import time

import pytest
import redis

from conftest import no_retry
from harness import HOST, Raw, encode, free_ports


def script_error(c, *args):
    with pytest.raises(redis.ResponseError) as e:
        c.execute_command(*args)
    return str(e.value)


def test_eval_keys_argv_and_basic_types(r):
    assert r.eval("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2]}", 2, "k1", "k2", "a1", "a2") == [
        "k1", "k2", "a1", "a2"]
    assert r.eval("return 42", 0) == 42
    assert r.eval("return 3.99", 0) == 3  # numbers become integers, truncated
    assert r.eval("return -3.99", 0) == -3
    assert r.eval("return 'hello'", 0) == "hello"
    assert r.eval("return {1, 2, 3, 'ciao', {1, 2}}", 0) == [1, 2, 3, "ciao", [1, 2]]
    assert r.eval("return {1, 2, nil, 4}", 0) == [1, 2]  # an array stops at the first nil
    assert r.eval("return nil", 0) is None
    assert r.eval("return redis.status_reply('FINE')", 0) == "FINE"
    assert r.eval("return {ok='fine'}", 0) == "fine"


def test_booleans_resp2_script(r, protocol):
    assert r.eval("return true", 0) == 1
    assert r.eval("return false", 0) is None


def test_resp3_script_types(r, protocol):
    r.hset("h", "a", "1")
    got = r.eval("redis.setresp(3); return redis.call('hgetall', KEYS[1])", 1, "h")
    assert got == ({"a": "1"} if protocol == 3 else ["a", "1"])
    got = r.eval("redis.setresp(3); return false", 0)
    assert got is False if protocol == 3 else got == 0
    assert r.eval("return {double=1.5}", 0) in (1.5, "1.5")
    # A RESP3 map reply seen by the script is {map={...}}.
    assert r.eval("redis.setresp(3); local m = redis.call('hgetall', KEYS[1]); return m.map.a", 1, "h") == "1"
    assert r.eval("redis.setresp(3); return redis.call('get', 'nokey') == nil", 0) == (
        True if protocol == 3 else 1)


def test_resp2_call_reply_conversions(r):
    r.set("x", "foo")
    assert r.eval("return redis.call('get', KEYS[1])", 1, "x") == "foo"
    # A missing key is false inside the script, and false is a null reply.
    assert r.eval("return redis.call('get', 'nokey') == false", 0) == 1
    assert r.eval("return type(redis.call('incr', 'n'))", 0) == "number"
    assert r.eval("return redis.call('set', 'k', 'v').ok", 0) == "OK"
    assert r.eval("return redis.pcall('incr', 'x').err", 0) == "ERR value is not an integer or out of range"
    # Numbers passed to commands print as %.17g.
    r.eval("return redis.call('set', 'n', 3.5)", 0)
    assert r.get("n") == "3.5"
    r.eval("return redis.call('set', 'n', 10)", 0)
    assert r.get("n") == "10"


def test_error_wording(r):
    e = script_error(r, "EVAL", "return a", 0)
    assert re.fullmatch(r"user_script:1: Script attempted to access nonexistent global variable 'a' "
                        r"script: [0-9a-f]{40}, on @user_script:1\.", e), e
    e = script_error(r, "EVAL", "return redis.call('nosuch')", 0)
    assert re.fullmatch(r"Unknown Redis command called from script script: [0-9a-f]{40}, on @user_script:1\.", e), e
    e = script_error(r, "EVAL", "\n\nerror('boom')", 0)
    assert re.fullmatch(r"user_script:3: boom script: [0-9a-f]{40}, on @user_script:3\.", e), e
    r.set("x", "foo")
    e = script_error(r, "EVAL", "return redis.call('incr', KEYS[1])", 1, "x")
    assert re.fullmatch(r"value is not an integer or out of range script: [0-9a-f]{40}, on @user_script:1\.", e), e
    assert script_error(r, "EVAL", "return redis.error_reply('My Error')", 0) == "My Error"
    assert script_error(r, "EVAL", "return redis.error_reply('NoSpace')", 0) == "NoSpace"
    e = script_error(r, "EVAL", "return redis.call('get')", 0)
    assert e.startswith("Wrong number of args calling Redis command from script"), e
    e = script_error(r, "EVAL", "return redis.call('get', {})", 0)
    assert e.startswith("Lua redis lib command arguments must be strings or integers"), e
    e = script_error(r, "EVAL", "return redis.call('multi')", 0)
    assert e.startswith("This Redis command is not allowed from script"), e
    e = script_error(r, "EVAL", "return redis.call('eval', 'return 1', 0)", 0)
    assert e.startswith("This Redis command is not allowed from script"), e
    e = script_error(r, "EVAL", "return 'unterminated", 0)
    assert e.startswith("Error compiling script (new function): user_script:1:"), e


def test_numkeys_errors(r):
    assert script_error(r, "EVAL", "return 1", 2, "a") == "Number of keys can't be greater than number of args"
    assert script_error(r, "EVAL", "return 1", -1) == "Number of keys can't be negative"
    assert script_error(r, "EVAL", "return 1", "x") == "value is not an integer or out of range"


def test_pcall_catches_and_writes_before_an_error_stay(r):
    assert r.eval("local e = redis.pcall('nosuch'); return e.err", 0) == "ERR Unknown Redis command called from script"
    with pytest.raises(redis.ResponseError):
        r.eval("redis.call('set', 'before', '1'); redis.call('incr', 'before_str_' .. 'x'); "
               "redis.call('set', 'w', 'x'); redis.call('incr', 'w'); redis.call('set', 'after', '1')", 0)
    assert r.get("before") == "1" and r.get("w") == "x"  # no rollback, as in Redis
    assert r.get("after") is None


def test_sandbox(r):
    ro = "Attempt to modify a readonly table"
    for body in ["a = 10", "redis.call = function() return 1 end", "local g = getmetatable(_G); g.__index = {}",
                 "string.len = nil", "_G.x = 1", "math.x = 1", "table.insert = nil"]:
        assert ro in script_error(r, "EVAL", body, 0), body
    assert ro in script_error(r, "EVAL", "setmetatable(_G, {})", 0)
    assert ro in script_error(r, "EVAL", "rawset(_G, 'x', 1)", 0)
    for name in ["os", "io", "loadfile", "dofile", "print", "require", "debug", "module"]:
        e = script_error(r, "EVAL", f"return {name}", 0)
        assert "attempted to access nonexistent global variable" in e, (name, e)
    # Libraries Redis loads are there.
    assert r.eval("return bit.band(0xff, 0x0f)", 0) == 15
    assert r.eval("return bit.tohex(65535, 4)", 0) == "ffff"
    assert r.eval("return string.format('%d-%s', 5, 'x')", 0) == "5-x"
    assert r.eval("return redis.sha1hex('')", 0) == "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    assert r.eval("return redis.REDIS_VERSION ~= nil", 0) == 1
    assert r.eval("return {type(loadstring), type(pcall), type(bit), type(math.random)}", 0) == [
        "function", "function", "table", "function"]
    # Binary chunks are refused (Lua 5.1 bytecode is not verified).
    assert r.eval("return loadstring(string.dump(function() return 1 end)) == nil", 0) == 1


def test_script_cache(r):
    sha = r.script_load("return 'loaded'")
    assert sha == hashlib.sha1(b"return 'loaded'").hexdigest()
    assert r.evalsha(sha, 0) == "loaded"
    assert r.evalsha(sha.upper(), 0) == "loaded"
    assert r.script_exists(sha, "0" * 40) == [True, False]
    for sha_arg in ["0" * 40, "short"]:
        with pytest.raises(redis.exceptions.NoScriptError, match=r"^No matching script\. Please use EVAL\.$"):
            r.evalsha(sha_arg, 0)
    sha2 = r.eval("return redis.sha1hex('x')", 0)
    assert len(sha2) == 40
    # EVAL caches its script too.
    body = "return 'via eval'"
    r.eval(body, 0)
    assert r.script_exists(r.eval("return redis.sha1hex(ARGV[1])", 0, body)) == [True]
    assert r.script_flush() is True
    assert r.script_exists(sha) == [False]
    assert script_error(r, "SCRIPT", "FLUSH", "bad") == "SCRIPT FLUSH only support SYNC|ASYNC option"
    assert script_error(r, "SCRIPT", "KILL") == "NOTBUSY No scripts in execution right now."


def test_read_only_scripts_and_flags(r):
    e = script_error(r, "EVAL_RO", "return redis.call('set', KEYS[1], 'v')", 1, "a")
    assert e.startswith("Write commands are not allowed from read-only scripts."), e
    assert r.get("a") is None
    r.set("a", "1")
    assert r.execute_command("EVAL_RO", "return redis.call('get', KEYS[1])", 1, "a") == "1"
    sha = r.script_load("return redis.call('get', KEYS[1])")
    assert r.execute_command("EVALSHA_RO", sha, 1, "a") == "1"
    e = script_error(r, "EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'a', 'b')", 0)
    assert e.startswith("Write commands are not allowed from read-only scripts.") and "@user_script:2." in e, e
    assert script_error(r, "EVAL_RO", "#!lua\nreturn 1", 0) == \
        "Can not execute a script with write flag using *_ro command."
    assert r.execute_command("EVAL_RO", "#!lua flags=no-writes\nreturn 2", 0) == 2
    assert r.eval("#!lua flags=allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 3", 0) == 3
    assert script_error(r, "EVAL", "#!lua flags=bad\nreturn 1", 0) == "Unexpected flag in script shebang: bad"
    assert script_error(r, "EVAL", "#!python\nreturn 1", 0) == "Unexpected engine in script shebang: #!python"
    assert script_error(r, "EVAL", "#!lua name=x\nreturn 1", 0) == "Unknown lua shebang option: name=x"
    assert script_error(r, "EVAL", "#!lua", 0) == "Invalid script shebang"


def test_multi_exec_and_watch(r, client_for, server):
    p = r.pipeline(transaction=True)
    p.eval("return redis.call('incr', KEYS[1])", 1, "ctr")
    p.eval("return redis.call('incr', KEYS[1])", 1, "ctr")
    assert p.execute() == [1, 2]
    # A script's write touches a watched key: the watcher's EXEC fails.
    other = client_for(server)
    with r.pipeline(transaction=True) as p:
        p.watch("w")
        other.eval("return redis.call('set', KEYS[1], 'changed')", 1, "w")
        p.multi()
        p.set("w", "mine")
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.get("w") == "changed"


def test_select_inside_script_stays_inside(r):
    r.set("k", "db0")
    assert r.eval("redis.call('select', 0); return redis.call('get', 'k')", 0) == "db0"
    assert r.get("k") == "db0"


def test_info_counts_scripts(r):
    r.script_flush()
    r.script_load("return 1")
    r.script_load("return 2")
    mem = r.info("memory")
    assert int(mem["number_of_cached_scripts"]) == 2
    assert int(mem["used_memory_lua"]) > 0


def test_self_referencing_table(server):
    # A table that contains itself: the reply nests until the Lua stack limit, then an error
    # element, and the connection stays usable. Read raw: client parsers recurse too deeply.
    with Raw(server.port) as c:
        c.send(encode("EVAL", "local t = {}; t[1] = t; return t", "0"))
        depth = 0
        while True:
            line = c._line()
            if line != b"*1":
                break
            depth += 1
        assert line == b"-ERR reached lua stack limit", line
        assert depth > 10
        assert c.call("PING") == "PONG"


# ----------------------------------------------------------------- tenants (Locus only)


ADMIN_TOML = """
[admin]
user = "root"
password = "root-pw"
"""


def client(port, **kw):
    return redis.Redis(host=HOST, port=port, decode_responses=True, socket_timeout=10, retry=no_retry(), **kw)


def tenants_toml(main, mode, tenants):
    """Two or more tenants (`name`, then its identifying TOML lines) under `mode` tenancy."""
    blocks = "".join(f'\n[[tenant]]\nname = "{name}"\n{lines}\n' for name, lines in tenants)
    return f"""
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "32MiB"
page_size = "64KiB"

[tenancy]
mode = "{mode}"
{ADMIN_TOML}{blocks}"""


@pytest.mark.locus_only
def test_script_cache_is_per_tenant(start_locus_toml):
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(tenants_toml(main, "port", [("a", f"port = {pa}"), ("b", f"port = {pb}")]), pa)
    a, b = client(pa), client(pb)
    sha = a.script_load("return redis.call('set', KEYS[1], ARGV[1])")
    assert a.script_exists(sha) == [True]
    assert b.script_exists(sha) == [False], "tenant b sees tenant a's script cache"
    with pytest.raises(redis.exceptions.NoScriptError):
        b.evalsha(sha, 1, "k", "v")
    assert a.evalsha(sha, 1, "k", "from-a") == "OK"
    assert b.get("k") is None, "a script of tenant a wrote into tenant b"
    b.script_load("return 1")
    assert b.script_flush()
    assert a.script_exists(sha) == [True], "tenant b's SCRIPT FLUSH flushed tenant a's cache"
    assert int(b.info("memory")["number_of_cached_scripts"]) == 0
    assert int(a.info("memory")["number_of_cached_scripts"]) == 1
    assert srv.alive()


@pytest.mark.locus_only
def test_function_stats_while_busy_stays_inside_the_tenant(start_locus_toml):
    """Tenant a's busy function is shown by FUNCTION STATS to a's clients only; tenant b's
    FUNCTION STATS is answered BUSY, never with a's function, its arguments or its libraries."""
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(tenants_toml(main, "port", [("a", f"port = {pa}"), ("b", f"port = {pb}")]), pa)
    admin = client(pa, username="root", password="root-pw")  # port tenancy: on a tenant's port
    admin.config_set("busy-reply-threshold", "50")
    a, a2, b = client(pa), client(pa), client(pb)
    a.function_load(SPIN_LIBRARY)
    t, got = run_in_thread(lambda: a.fcall("spin", 0, "secret-arg"))
    wait_busy(a2)
    with pytest.raises(redis.ResponseError, match="BUSY") as e:
        b.execute_command("FUNCTION", "STATS")
    assert "spin" not in str(e.value) and "secret-arg" not in str(e.value)
    stats = a2.execute_command("FUNCTION", "STATS")
    assert "secret-arg" in str(stats)
    assert a2.execute_command("FUNCTION", "KILL") in (True, "OK")
    t.join(5)
    assert not t.is_alive() and "killed by user" in got["err"], got
    assert b.execute_command("FUNCTION", "STATS")["running_script"] is None
    assert srv.alive()


@pytest.mark.locus_only
def test_another_tenant_cannot_kill_a_busy_script(start_locus_toml):
    """Tenant b's SCRIPT KILL and FUNCTION KILL are answered BUSY while tenant a's script runs, and
    the script runs on: only a's clients (or the admin) stop it."""
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(tenants_toml(main, "port", [("a", f"port = {pa}"), ("b", f"port = {pb}")]), pa)
    admin = client(pa, username="root", password="root-pw")
    admin.config_set("busy-reply-threshold", "50")
    a, a2, b = client(pa), client(pa), client(pb)
    t, got = run_in_thread(lambda: a.eval("while true do end", 0))
    wait_busy(a2)
    for kill in (("SCRIPT", "KILL"), ("FUNCTION", "KILL")):
        with pytest.raises(redis.ResponseError, match="^BUSY"):
            b.execute_command(*kill)
    t.join(0.5)
    assert t.is_alive(), "tenant b's kill stopped tenant a's script"
    assert a2.execute_command("SCRIPT", "KILL") in (True, "OK")
    t.join(5)
    assert not t.is_alive() and "killed by user" in got["err"], got
    assert srv.alive()


@pytest.mark.locus_only
def test_script_cannot_reach_another_tenants_key(start_locus_toml):
    (main,) = free_ports(1)
    srv = start_locus_toml(tenants_toml(main, "prefix", [
        ("a", 'prefix = "a:"\nuser = "a"\npassword = "pa"'),
        ("b", 'prefix = "b:"\nuser = "b"\npassword = "pb"'),
    ]), main)
    root = client(main, username="root", password="root-pw")
    root.set("b:secret", "s3cret")
    a = client(main, username="a", password="pa")
    # The key is computed inside the script, not declared in KEYS.
    for body in ["return redis.call('get', 'b:' .. 'secret')",
                 "return redis.call('set', 'b:' .. 'secret', 'stolen')",
                 "return redis.call('keys', 'b:*')"]:
        with pytest.raises(redis.ResponseError) as e:
            a.eval(body, 1, "a:k")
        assert "secret" not in str(e.value) and "s3cret" not in str(e.value)
    # Even the admin's script stays inside the tenant of its KEYS.
    with pytest.raises(redis.ResponseError, match="outside its tenant"):
        root.eval("return redis.call('get', 'b:secret')", 1, "a:k")
    assert root.get("b:secret") == "s3cret"
    assert a.eval("redis.call('set', KEYS[1], 'mine'); return redis.call('get', KEYS[1])", 1, "a:k") == "mine"
    assert srv.alive()


# ------------------------------------------------------------ hostile scripts and busy scripts


def test_hostile_library_input(r):
    # Deep nesting is an error, never a crash (Redis has had overflows in cjson and cmsgpack).
    deep = "[" * 100_000 + "]" * 100_000
    e = script_error(r, "EVAL", "return cjson.decode(ARGV[1])", 0, deep)
    assert "nested" in e or "too many" in e.lower(), e
    assert script_error(r, "EVAL", "return cjson.decode('{\"a\":')", 0)
    assert script_error(r, "EVAL", "return cjson.decode('[1,2')", 0)
    assert r.eval("return cjson.encode(cjson.decode(ARGV[1]))", 0, '{"a":[1,2,{"b":null}]}') == \
        '{"a":[1,2,{"b":null}]}'
    assert r.eval("return cjson.encode({1, 2, 'x/y'})", 0) == '[1,2,"x\\/y"]'
    # cmsgpack: truncated input, a length beyond the input, nesting far past any sane depth.
    for payload in [b"\xdb\xff\xff\xff\xff", b"\xdd\xff\xff\xff\xff", b"\x92\x01", b"\x91" * 100_000]:
        with pytest.raises(redis.ResponseError):
            r.eval("return cmsgpack.unpack(ARGV[1])", 0, payload)
    assert r.eval("return cmsgpack.unpack(cmsgpack.pack({1, 2, 'three'}))", 0) == [1, 2, "three"]
    assert r.ping()


def test_huge_table_hits_the_memory_cap(r, peer):
    if peer == "redis":
        pytest.skip("redis-server has no cap on its Lua VM (it would build the table)")
    e = script_error(r, "EVAL", "local t = {} for i = 1, 1e9 do t[i] = i end return #t", 0)
    assert "not enough memory" in e, e
    assert r.eval("return 1 + 1", 0) == 2  # the VM works on after the error


def test_busy_script_kill(start_server, client_for):
    import threading

    srv = start_server()
    a, b = client_for(srv), client_for(srv)
    b.config_set("busy-reply-threshold", "50")
    assert b.config_get("lua-time-limit") == {"lua-time-limit": "50"}
    got = {}

    def run():
        try:
            a.eval("while true do end", 0)
        except redis.ResponseError as e:
            got["err"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.time() + 5
    while True:
        try:
            b.ping()
        except redis.exceptions.BusyLoadingError:
            raise
        except redis.ResponseError as e:
            assert str(e).startswith("BUSY"), e
            break
        assert time.time() < deadline, "no BUSY reply while the script ran"
        time.sleep(0.02)
    with pytest.raises(redis.ResponseError, match="BUSY"):
        b.execute_command("FUNCTION", "KILL")  # an EVAL is killed by SCRIPT KILL only
    assert b.execute_command("SCRIPT", "KILL") in (True, "OK")
    t.join(5)
    assert not t.is_alive()
    assert "killed by user" in got["err"], got
    assert b.ping()
    with pytest.raises(redis.ResponseError, match="NOTBUSY"):
        b.execute_command("SCRIPT", "KILL")


SPIN_LIBRARY = "#!lua name=spinlib\nredis.register_function('spin', function(keys, args) local a = 1 while true do a = a + 1 end end)"


def wait_busy(c, deadline_s=5):
    """Until `c` is answered BUSY (the script passed busy-reply-threshold)."""
    deadline = time.time() + deadline_s
    while True:
        try:
            c.ping()
        except redis.ResponseError as e:
            assert str(e).startswith("BUSY"), e
            return
        assert time.time() < deadline, "no BUSY reply while the script ran"
        time.sleep(0.02)


def run_in_thread(fn):
    import threading

    got = {}

    def run():
        try:
            got["ok"] = fn()
        except redis.ResponseError as e:
            got["err"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    return t, got


def test_function_stats_while_a_function_is_busy(start_server, client_for):
    """FUNCTION STATS answers while a function runs past busy-reply-threshold (Redis flags it
    allow-busy, so a client can decide to FUNCTION KILL): the function's name, its FCALL and how
    long it has run; while an EVAL is busy it is answered BUSY like everything else."""
    srv = start_server()
    a, b = client_for(srv), client_for(srv)
    b.config_set("busy-reply-threshold", "50")
    b.function_load(SPIN_LIBRARY, replace=True)
    t, got = run_in_thread(lambda: a.fcall("spin", 0, "x1"))
    wait_busy(b)
    stats = b.execute_command("FUNCTION", "STATS")
    stats = dict(zip(stats[::2], stats[1::2])) if isinstance(stats, list) else stats
    running = stats["running_script"]
    running = dict(zip(running[::2], running[1::2])) if isinstance(running, list) else running
    assert running["name"] == "spin"
    assert list(running["command"]) == ["FCALL", "spin", "0", "x1"]  # as the client sent it
    assert int(running["duration_ms"]) >= 50
    engines = stats["engines"]
    lua = (dict(zip(engines[::2], engines[1::2])) if isinstance(engines, list) else engines)["LUA"]
    lua = dict(zip(lua[::2], lua[1::2])) if isinstance(lua, list) else lua
    assert int(lua["libraries_count"]) == 1 and int(lua["functions_count"]) == 1
    assert b.execute_command("FUNCTION", "KILL") in (True, "OK")
    t.join(5)
    assert not t.is_alive() and "killed by user" in got["err"], got
    # While an EVAL is busy, FUNCTION STATS is answered BUSY.
    t, got = run_in_thread(lambda: a.eval("while true do end", 0))
    wait_busy(b)
    with pytest.raises(redis.ResponseError, match="BUSY"):
        b.execute_command("FUNCTION", "STATS")
    assert b.execute_command("SCRIPT", "KILL") in (True, "OK")
    t.join(5)
    assert not t.is_alive()
    stats = b.execute_command("FUNCTION", "STATS")
    stats = dict(zip(stats[::2], stats[1::2])) if isinstance(stats, list) else stats
    assert stats["running_script"] is None


def test_a_client_can_connect_and_kill_while_a_script_is_busy(start_server, client_for):
    """HELLO, AUTH and QUIT are answered while a script is busy, as Redis answers them: a client
    that opens its connection with HELLO 3 (redis-py 8's default) can still connect and send
    SCRIPT KILL. Everything else gets BUSY."""
    srv = start_server()
    a, b = client_for(srv), client_for(srv)
    b.config_set("busy-reply-threshold", "50")
    t, got = run_in_thread(lambda: a.eval("while true do end", 0))
    wait_busy(b)
    with Raw(srv.port) as fresh:
        hello = fresh.call("HELLO", "3")
        assert hello[b"proto"] == 3, hello
        assert "called without any password" in str(fresh.call("AUTH", "nopass"))
        assert str(fresh.call("GET", "k")).startswith("BUSY")
        assert fresh.call("SCRIPT", "KILL") == "OK"
    t.join(5)
    assert not t.is_alive() and "killed by user" in got["err"], got
    with Raw(srv.port) as fresh:
        assert fresh.call("QUIT") == "OK"


def test_reset_watch_and_unwatch_answer_while_a_script_is_busy(start_server, client_for):
    """RESET, WATCH and UNWATCH are answered while a script is busy, as Redis answers them
    (allow-busy): RESET resets the connection (name, MULTI, watches), WATCH inside MULTI is
    refused as ever, a wrong arity is an arity error; MULTI and DISCARD answer as at any time, EXEC
    is refused; everything else still gets BUSY."""
    srv = start_server()
    a, b = client_for(srv), client_for(srv)
    b.config_set("busy-reply-threshold", "50")
    with Raw(srv.port) as c:
        assert c.call("CLIENT", "SETNAME", "before-reset") == "OK"
        t, got = run_in_thread(lambda: a.eval("while true do end", 0))
        wait_busy(b)
        assert c.call("WATCH", "k1", "k2") == "OK"
        assert c.call("UNWATCH") == "OK"
        assert str(c.call("UNWATCH", "x")).startswith("ERR wrong number of arguments"), "arity"
        assert str(c.call("WATCH")).startswith("ERR wrong number of arguments")
        assert c.call("WATCH", "k1") == "OK"
        assert c.call("MULTI") == "OK"
        assert str(c.call("WATCH", "k2")) == "ERR WATCH inside MULTI is not allowed"
        assert c.call("RESET") == "RESET"  # leaves the MULTI, forgets the watch and the name
        assert str(c.call("DISCARD")) == "ERR DISCARD without MULTI"
        assert c.call("MULTI") == "OK"
        assert str(c.call("MULTI")) == "ERR MULTI calls can not be nested"
        assert c.call("DISCARD") == "OK"
        # A refused EXEC discards, in MULTI or not.
        assert str(c.call("EXEC")).startswith("EXECABORT Transaction discarded because of: BUSY")
        assert str(c.call("GET", "k1")).startswith("BUSY")
        assert b.execute_command("SCRIPT", "KILL") in (True, "OK")
        t.join(5)
        assert not t.is_alive() and "killed by user" in got["err"], got
        assert c.call("CLIENT", "GETNAME") is None
        assert str(c.call("EXEC")) == "ERR EXEC without MULTI"
        assert c.call("PING") == "PONG"


def exec_set(c, key, value):
    """MULTI, SET key value, EXEC on the Raw connection `c`: EXEC's reply (None: aborted)."""
    assert c.call("MULTI") == "OK"
    assert c.call("SET", key, value) == "QUEUED"
    return c.call("EXEC")


# Busy for a second by the clock, then one write: a script that wrote cannot be killed, so the
# write comes after the WATCHes sent while it is busy.
SPIN_THEN_SET = ("local function ms() local t = redis.call('TIME') return t[1] * 1000 + t[2] / 1000 end "
                 "local s = ms() while ms() - s < 1000 do end "
                 "return redis.call('SET', KEYS[1], ARGV[1])")


def test_watch_while_a_script_is_busy_sees_the_scripts_later_writes(start_server, client_for):
    """A key WATCHed while a script is busy is watched from then on: the script's write to it
    after the WATCH fails the EXEC (as in Redis); a key the script leaves alone does not."""
    srv = start_server()
    a, b = client_for(srv), client_for(srv)
    b.config_set("busy-reply-threshold", "50")
    b.set("untouched", "1")
    with Raw(srv.port) as c, Raw(srv.port) as d:
        t, got = run_in_thread(lambda: a.eval(SPIN_THEN_SET, 1, "written", "by-script"))
        wait_busy(b)
        assert c.call("WATCH", "written") == "OK"
        assert d.call("WATCH", "untouched") == "OK"
        t.join(5)
        assert not t.is_alive() and got.get("ok") in (True, "OK"), got
        assert exec_set(c, "written", "by-c") is None, "the script's write after WATCH did not fail EXEC"
        assert exec_set(d, "untouched", "by-d") == ["OK"], "a key the script left alone failed EXEC"
    assert b.mget("written", "untouched") == ["by-script", "by-d"]


@pytest.mark.locus_only
def test_watch_and_reset_while_busy_stay_inside_the_tenant(start_locus_toml):
    """While tenant a's script is busy, tenant b's WATCH of a key of the same name watches b's key:
    a's script writing its own key does not fail b's EXEC, and b's RESET touches b only. In prefix
    tenancy a WATCH of another tenant's key is refused while busy as at any time."""
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(tenants_toml(main, "port", [("a", f"port = {pa}"), ("b", f"port = {pb}")]), pa)
    admin = client(pa, username="root", password="root-pw")
    admin.config_set("busy-reply-threshold", "50")
    a, b = client(pa), client(pb)
    b.set("k", "b-value")
    with Raw(pa) as a2, Raw(pb) as b2, Raw(pb) as b3:
        t, got = run_in_thread(lambda: a.eval(SPIN_THEN_SET, 1, "k", "a-value"))
        wait_busy(b)
        assert a2.call("WATCH", "k") == "OK"
        assert b2.call("WATCH", "k") == "OK"
        assert b3.call("WATCH", "k") == "OK"
        assert b3.call("RESET") == "RESET"
        t.join(5)
        assert not t.is_alive() and got.get("ok") in (True, "OK"), got
        assert exec_set(a2, "k", "a2") is None
        assert exec_set(b2, "k", "b2") == ["OK"], "tenant a's script failed tenant b's EXEC"
    assert b.get("k") == "b2" and a.get("k") == "a-value"
    assert srv.alive()

    (main,) = free_ports(1)
    srv = start_locus_toml(tenants_toml(main, "prefix", [
        ("a", 'prefix = "a:"\nuser = "a"\npassword = "pa"'),
        ("b", 'prefix = "b:"\nuser = "b"\npassword = "pb"'),
    ]), main)
    root = client(main, username="root", password="root-pw")
    root.config_set("busy-reply-threshold", "50")
    a = client(main, username="a", password="pa")
    with Raw(main) as b:
        assert b.call("AUTH", "b", "pb") == "OK"
        t, got = run_in_thread(lambda: a.eval("while true do end", 1, "a:k"))
        wait_busy(root)
        assert str(b.call("WATCH", "a:k")).startswith("NOPERM")
        assert str(b.call("WATCH", "b:k", "a:k")).startswith("NOPERM")
        assert b.call("WATCH", "b:k") == "OK"
        assert root.execute_command("SCRIPT", "KILL") in (True, "OK")
        t.join(5)
        assert not t.is_alive()
        assert exec_set(b, "b:k", "v") == ["OK"]
    assert srv.alive()


def test_script_kill_ends_a_script_that_catches_it_with_pcall(start_server, client_for):
    """SCRIPT KILL ends a read-only script even when it calls everything through pcall: the kill
    is raised again right after the pcall that caught it."""
    srv = start_server()
    a, b = client_for(srv), client_for(srv)
    b.config_set("busy-reply-threshold", "50")
    t, got = run_in_thread(lambda: a.eval(
        "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end", 0))
    wait_busy(b)
    assert b.execute_command("SCRIPT", "KILL") in (True, "OK")
    t.join(5)
    assert not t.is_alive(), "the script survived SCRIPT KILL"
    assert "killed by user" in got["err"], got
    assert b.ping()
    # The VM runs on at full speed after it: a loop that is not killed completes.
    assert a.eval("local n = 0 for i = 1, 300000 do n = n + 1 end return n", 0) == 300000


def test_busy_script_that_wrote_is_unkillable(peer, client_for):
    import threading

    from conftest import _start, _stop

    srv = _start(peer)  # not the start_server fixture: this server is meant to stop
    try:
        a, b = client_for(srv), client_for(srv)
        b.config_set("busy-reply-threshold", "50")
        t = threading.Thread(target=lambda: pytest.raises(Exception, a.eval,
                                                          "redis.call('set', 'k', 'v') while true do end", 0))
        t.start()
        deadline = time.time() + 5
        while True:
            try:
                b.ping()
            except redis.ResponseError:
                break
            assert time.time() < deadline
            time.sleep(0.02)
        with pytest.raises(redis.ResponseError, match="UNKILLABLE"):
            b.execute_command("SCRIPT", "KILL")
        try:
            b.execute_command("SHUTDOWN", "NOSAVE")
        except redis.ConnectionError:
            pass
        t.join(5)
        assert not t.is_alive()
        deadline = time.time() + 5
        while srv.alive() and time.time() < deadline:
            time.sleep(0.05)
        assert not srv.alive(), "SHUTDOWN NOSAVE did not stop the server"
    finally:
        _stop(srv)


def test_xread_block_is_refused_from_scripts_and_sort_of_a_set_is_ordered(r):
    """Redis refuses XREAD/XREADGROUP BLOCK from a script (inside MULTI they answer at once
    instead), and sorts a set's SORT BY <constant> ALPHA when a script calls it, so that the
    script's result does not depend on the set's layout."""
    r.delete("s", "myset")
    r.xgroup_create("s", "g", "$", mkstream=True)
    assert r.eval("return redis.pcall('xread','STREAMS','s','$')", 1, "s") is None
    with pytest.raises(redis.ResponseError, match="xread command is not allowed with BLOCK option from scripts"):
        r.eval("return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')", 1, "s")
    assert r.eval("return redis.pcall('xreadgroup','group','g','c','STREAMS','s','>')", 1, "s") is None
    with pytest.raises(redis.ResponseError, match="xreadgroup command is not allowed with BLOCK option from scripts"):
        r.eval("return redis.pcall('xreadgroup','group','g','c','BLOCK',0,'STREAMS','s','>')", 1, "s")
    members = [f"m{i}" for i in (9, 3, 7, 1, 12, 5, 30, 2, 8, 4, 6, 11, 10)]
    r.sadd("myset", *members)
    got = r.eval("return redis.call('sort',KEYS[1],'by','_')", 1, "myset")
    assert list(got) == sorted(members)


def test_script_flush_keeps_functions_and_lazy_libraries(r):
    """SCRIPT FLUSH drops the EVAL scripts (Locus replaces the tenant's Lua VM, as Redis its eval
    VM) and leaves the function libraries callable; the libraries Lua code reads lazily (cjson,
    cmsgpack, bit) are there again in the new VM, read-only as before."""
    r.function_flush()
    r.function_load("#!lua name=keep\nredis.register_function('keep_get', function(k) return redis.call('GET', k[1]) end)")
    sha = r.script_load("return cjson.encode({1, 2})")
    assert r.evalsha(sha, 0) == "[1,2]"
    r.set("kf", "v")
    assert r.script_flush()
    assert r.script_exists(sha) == [False]
    assert r.fcall("keep_get", 1, "kf") == "v"
    assert r.eval("return cmsgpack.unpack(cmsgpack.pack(bit.band(7, 3)))", 0) == 3
    with pytest.raises(redis.ResponseError, match="readonly table"):
        r.eval("cjson.encode = nil", 0)
    r.function_flush()


def test_allow_busy_commands_are_queued_inside_multi_while_busy(start_server, client_for):
    """Inside MULTI, Redis queues its allow-busy commands other than the transaction's own, QUIT
    and RESET, while a script is busy as at any time: SCRIPT KILL, FUNCTION STATS, UNWATCH and
    HELLO answer QUEUED (the queued SCRIPT KILL kills nothing), and the EXEC is refused while the
    script runs. Not busy, UNWATCH inside MULTI is queued too and runs at EXEC."""
    srv = start_server()
    a, b = client_for(srv), client_for(srv)
    b.config_set("busy-reply-threshold", "50")
    with Raw(srv.port) as c:
        assert c.call("MULTI") == "OK"
        assert c.call("UNWATCH") == "QUEUED"
        assert c.call("EXEC") == ["OK"]
        t, got = run_in_thread(lambda: a.eval("while true do end", 0))
        wait_busy(b)
        assert c.call("MULTI") == "OK"
        for cmd in (("SCRIPT", "KILL"), ("FUNCTION", "STATS"), ("UNWATCH",), ("HELLO", "2")):
            assert c.call(*cmd) == "QUEUED", cmd
        # Not allow-busy: refused, and the transaction will abort.
        assert str(c.call("SCRIPT", "FLUSH")).startswith("BUSY")
        time.sleep(0.2)
        assert t.is_alive(), "the queued SCRIPT KILL killed the script"
        assert str(c.call("EXEC")).startswith("EXECABORT Transaction discarded because of: BUSY")
        assert b.execute_command("SCRIPT", "KILL") in (True, "OK")
        t.join(5)
        assert not t.is_alive() and "killed by user" in got["err"], got
        assert c.call("PING") == "PONG"


@pytest.mark.locus_only
def test_what_is_queued_while_busy_is_bounded(start_server, client_for):
    """Commands queued inside MULTI while a script is busy are held without the engine, so not
    charged to the tenant: Locus bounds them at 64 KiB of arguments a transaction (Redis does
    not). Past it the command is refused BUSY and the EXEC aborts; a new MULTI counts anew."""
    srv = start_server()
    a, b = client_for(srv), client_for(srv)
    b.config_set("busy-reply-threshold", "50")
    with Raw(srv.port) as c:
        t, got = run_in_thread(lambda: a.eval("while true do end", 0))
        wait_busy(b)
        big = "x" * 20_000
        for _ in range(2):
            assert c.call("MULTI") == "OK"
            for _ in range(3):
                assert c.call("AUTH", "default", big) == "QUEUED"
            assert str(c.call("AUTH", "default", big)).startswith("BUSY")
            assert str(c.call("EXEC")).startswith("EXECABORT")
        assert b.execute_command("SCRIPT", "KILL") in (True, "OK")
        t.join(5)
        assert not t.is_alive() and "killed by user" in got["err"], got
