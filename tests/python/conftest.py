"""Fixtures for the end-to-end suites: real server processes on loopback, real clients.

The peer under test is Locus (`$LOCUS_BIN serve --config <tmp toml>`, default
`target/release/locus`) unless `--peer redis` (or `LOCUS_TEST_TARGET=redis`) selects Debian's
`redis-server`: every protocol-level assertion is first checked against real Redis, then Locus must
behave the same. Tests marked `locus_only` (tenancy, Locus admin commands) are skipped against Redis.
The memcached protocol suite (tests marked `memcached`, test_memcached.py) has the same mechanism:
`--peer memcached` runs it (and only it) against Debian's `memcached -p P -U 0`; under `--peer redis`
it is skipped; under `--peer locus` it runs against Locus's `[memcached]` listener.

Fixtures
  peer           "locus" | "redis"
  server         one server for the whole session (flushed before every test that uses `r`/`raw`)
  protocol       2 and 3 (tests that take `r` run once per RESP version)
  r / rb         redis-py client (str / bytes replies) on `server`, RESP `protocol`
  raw            a `harness.Raw` socket client on `server`
  start_server   factory for extra servers with their own settings (eviction, auth), stopped at teardown
"""

from __future__ import annotations

import os

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import harness
import locus_config

_RUNNING: list[harness.ServerProcess] = []


def pytest_addoption(parser):
    parser.addoption(
        "--peer",
        choices=["locus", "redis", "memcached"],
        default=os.environ.get("LOCUS_TEST_TARGET", "locus"),
        help="server under test: the Locus binary ($LOCUS_BIN), Debian's redis-server, or Debian's "
             "memcached (memcached protocol tests only)",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "locus_only: Locus-specific behaviour (tenants, LOCUS.* commands)")
    config.addinivalue_line("markers", "memcached: memcached protocol tests (peer: locus or memcached)")


def pytest_collection_modifyitems(config, items):
    peer = config.getoption("--peer")
    if peer == "redis":
        skip = pytest.mark.skip(reason="Locus-only test (running against redis-server)")
        skip_mc = pytest.mark.skip(reason="memcached protocol test (running against redis-server)")
        for item in items:
            if "locus_only" in item.keywords:
                item.add_marker(skip)
            elif "memcached" in item.keywords:
                item.add_marker(skip_mc)
    elif peer == "memcached":
        skip = pytest.mark.skip(reason="Locus-only test (running against memcached)")
        skip_resp = pytest.mark.skip(reason="RESP test (running against memcached)")
        for item in items:
            if "memcached" not in item.keywords:
                item.add_marker(skip_resp)
            elif "locus_only" in item.keywords:
                item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, attach what every running server wrote to its log during this test."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        marks = getattr(item, "_server_log_marks", {})
        for srv in list(_RUNNING):
            text = srv.log_tail(since=marks.get(id(srv), 0))
            alive = "alive" if srv.alive() else f"EXITED rc={srv.proc.returncode}"
            rep.sections.append((f"{srv.kind} log (port {srv.port}, {alive})", text or "(empty)"))


@pytest.fixture(autouse=True)
def _mark_logs(request):
    request.node._server_log_marks = {id(s): s.log_size() for s in _RUNNING}
    yield


@pytest.fixture(scope="session")
def peer(pytestconfig) -> str:
    return pytestconfig.getoption("--peer")


def _start(peer: str, **settings) -> harness.ServerProcess:
    if peer == "redis":
        srv = harness.start_redis(locus_config.redis_args(**settings))
    else:
        if not os.access(harness.locus_bin(), os.X_OK):
            pytest.fail(f"Locus binary {harness.locus_bin()} missing: build it (cargo build --release --bin locus) "
                        "or set LOCUS_BIN; use --peer redis to run the suites against redis-server")
        port = harness.free_port()
        srv = harness.start_locus(locus_config.locus_toml(port=port, **settings), port)
    _RUNNING.append(srv)
    return srv


def _stop(srv: harness.ServerProcess):
    srv.stop()
    if srv in _RUNNING:
        _RUNNING.remove(srv)


@pytest.fixture(scope="session")
def server(peer):
    srv = _start(peer)
    yield srv
    _stop(srv)


@pytest.fixture(autouse=True)
def _server_survives(request):
    """Every test that used the shared server must leave it running (no crash, no panic exit)."""
    yield
    if "server" in request.fixturenames:
        srv = request.getfixturevalue("server")
        assert srv.alive(), f"server process died during the test:\n{srv.log_tail()}"


@pytest.fixture
def start_server(peer):
    """Factory: start_server(maxmemory=..., policy=..., samples=..., requirepass=..., users=...)."""
    started = []

    def factory(**settings) -> harness.ServerProcess:
        srv = _start(peer, **settings)
        started.append(srv)
        return srv

    yield factory
    for srv in started:
        alive = srv.alive()
        _stop(srv)
        assert alive, f"{srv.kind} died during the test:\n{srv.log_tail()}"


@pytest.fixture
def start_locus_toml(peer):
    """Factory for Locus-only tests: start_locus_toml(toml_text, poll_port) runs `locus serve --config`."""
    started = []

    def factory(toml_text: str, poll_port: int) -> harness.ServerProcess:
        assert peer == "locus"
        srv = harness.start_locus(toml_text, poll_port)
        _RUNNING.append(srv)
        started.append(srv)
        return srv

    yield factory
    for srv in started:
        alive = srv.alive()
        _stop(srv)
        assert alive, f"locus died during the test:\n{srv.log_tail()}"


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request) -> int:
    return request.param


def no_retry() -> Retry:
    """Test clients never retry: a dropped connection or a failed AUTH must surface, not be hidden."""
    return Retry(NoBackoff(), 0)


def _client(srv, protocol, decode):
    return redis.Redis(
        host=harness.HOST, port=srv.port, protocol=protocol, decode_responses=decode,
        socket_timeout=10, socket_connect_timeout=5, retry=no_retry(),
    )


@pytest.fixture
def r(server, protocol):
    c = _client(server, protocol, True)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def rb(server, protocol):
    c = _client(server, protocol, False)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def client_for():
    """Factory for extra redis-py clients (closed at teardown)."""
    made = []

    def factory(srv, protocol=2, decode=True, **kw):
        c = redis.Redis(host=harness.HOST, port=kw.pop("port", srv.port), protocol=protocol,
                        decode_responses=decode, socket_timeout=10, retry=no_retry(), **kw)
        made.append(c)
        return c

    yield factory
    for c in made:
        c.close()


@pytest.fixture
def raw(server):
    c = harness.Raw(server.port)
    c.call("FLUSHALL")
    yield c
    c.close()
