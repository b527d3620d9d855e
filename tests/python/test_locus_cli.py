"""The `locus serve` contract from CONFIG.md (Locus only): --print-config, validation errors with key
paths and exit status 1, CLI flags over the file, the startup line, clean exits on SIGTERM and
SHUTDOWN, and items larger than a page refused with an error (never truncated)."""

import signal
import subprocess
import tomllib

import pytest
import redis

from conftest import no_retry
from harness import HOST, Raw, free_port, locus_bin, new_workdir, wait_until

pytestmark = pytest.mark.locus_only


def run(args, config_text=None, timeout=20):
    argv = [locus_bin(), "serve"]
    if config_text is not None:
        cfg = new_workdir() / "locus.toml"
        cfg.write_text(config_text)
        argv += ["--config", str(cfg)]
    return subprocess.run(argv + args, capture_output=True, timeout=timeout, text=True)


def test_print_config_is_valid_toml_with_overrides():
    p = run(["--print-config", "--maxmemory", "64MiB", "--maxmemory-policy", "allkeys-lfu"],
            "[eviction]\nsamples = 7\n")
    assert p.returncode == 0, p.stderr
    cfg = tomllib.loads(p.stdout)
    assert cfg["eviction"]["policy"] == "allkeys-lfu"
    assert cfg["eviction"]["samples"] == 7
    mm = cfg["memory"]["maxmemory"]
    assert mm == "64MiB"  # sizes print in the unit they read best in


@pytest.mark.parametrize("toml,needles", [
    ('[eviction]\npolicy = "lru"\n', ["eviction.policy", '"lru"']),
    ('[server]\nno_such_key = 1\n', ["no_such_key"]),
    ('[eviction]\nsamples = 0\n', ["eviction.samples"]),
    ('[memory]\nmaxmemory = "lots"\n', ["maxmemory", '"lots"']),
    ('[tenancy]\nmode = "port"\n[[tenant]]\nname = "a"\n', ["tenant[0].port"]),
    ('[tenancy]\nmode = "prefix"\n[[tenant]]\nname = "a"\nprefix = "a:"\n[[tenant]]\nname = "a"\nprefix = "b:"\n',
     ["tenant[1].name", "duplicate"]),
    # every problem is reported, not only the first
    ('[eviction]\npolicy = "lru"\nsamples = 0\n', ["eviction.policy", "eviction.samples"]),
])
def test_invalid_config_exits_1_naming_the_key(toml, needles):
    p = run(["--port", str(free_port())], toml)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    for n in needles:
        assert n in p.stderr, (n, p.stderr)


def start(args):
    port = free_port()
    wd = new_workdir()
    log = open(wd / "locus.log", "wb")
    proc = subprocess.Popen([locus_bin(), "serve", "--port", str(port), "--bind", HOST] + args,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()

    def up():
        if proc.poll() is not None:
            raise AssertionError((wd / "locus.log").read_text())
        try:
            with Raw(port, timeout=1) as c:
                return c.call("PING") == "PONG"
        except OSError:
            return False

    wait_until(up, timeout=20, what="locus to answer PING")
    return proc, port, wd / "locus.log"


def stop(proc):
    if proc.poll() is None:
        proc.kill()
        proc.wait(5)


def test_cli_flags_startup_line_and_sigterm():
    proc, port, log = start(["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-random",
                             "--maxmemory-samples", "9"])
    try:
        with Raw(port) as c:
            assert c.call("CONFIG", "GET", "maxmemory") == [b"maxmemory", str(64 * 1024 * 1024).encode()]
            assert c.call("CONFIG", "GET", "maxmemory-policy") == [b"maxmemory-policy", b"allkeys-random"]
            assert c.call("CONFIG", "GET", "maxmemory-samples") == [b"maxmemory-samples", b"9"]
        assert f"locus: serving on 127.0.0.1:{port} (1 tenants)" in log.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        stop(proc)


def test_shutdown_command_exits_0():
    proc, port, _ = start([])
    try:
        with Raw(port) as c:
            c.send(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
            try:
                c.expect_closed(5)
            except AssertionError:
                pass  # a reply before closing is acceptable; the exit status is what matters
        assert proc.wait(10) == 0
    finally:
        stop(proc)


def test_values_larger_than_a_page_are_stored_and_larger_than_maxmemory_refused(start_server):
    """Values above an eighth of a page live outside the pages, up to maxmemory: a 2 MiB value is
    stored whole under 4 MiB (its page is 64 KiB); a 5 MiB one cannot be, and is refused with
    Redis's OOM error, storing nothing and evicting nothing for it."""
    srv = start_server(maxmemory=4 * 1024 * 1024, policy="allkeys-lru")
    c = redis.Redis(host=HOST, port=srv.port, retry=no_retry())
    value = bytes(range(256)) * (8 * 1024)  # 2 MiB, not one byte repeated
    assert c.set("big", value)
    assert c.get("big") == value
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        c.set("too-big", b"x" * (5 * 1024 * 1024))
    assert c.exists("too-big") == 0
    assert c.get("big") == value
    assert c.set("after", "ok") and c.get("after") == b"ok"
    c.close()
