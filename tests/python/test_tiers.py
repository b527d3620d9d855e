"""Memory tiers in the server (sdTMM, issue 15; Locus only): `[tier]` under a Zipf load over real
sockets. Items migrate both ways, the fast tier's free space returns between the watermarks once
the workers have run, no key is lost by a migration, OBJECT TIER follows a key that goes cold
then hot, INFO tiers shows a tenant its own figures only, and bad `[tier]` settings stop the
start with an error naming the key. The `file:` and `numa:` backends carry the same load
(`numa:1` skips where the machine has one node)."""

import bisect
import os
import random
import re
import subprocess

import pytest
import redis

from conftest import no_retry
from harness import HOST, free_port, free_ports, locus_bin, new_workdir, start_locus, wait_until

pytestmark = pytest.mark.locus_only

VALUE_LEN = 200
LOW, HIGH = 0.02, 0.05


def client(port, **kw):
    return redis.Redis(host=HOST, port=port, decode_responses=True, socket_timeout=10,
                       retry=no_retry(), **kw)


def value_of(key: str) -> str:
    """A value that names its key, so a value moved to the wrong item would show."""
    return (key + ":") * (VALUE_LEN // (len(key) + 1)) + "#" * (VALUE_LEN % (len(key) + 1))


def tiers_info(c) -> dict:
    """INFO tiers as {field: value or {k: v}} from the raw text."""
    text = c.execute_command("INFO", "tiers")
    if isinstance(text, dict):  # redis-py parsed it already (numbers as numbers)
        return {k: {kk: str(vv) for kk, vv in v.items()} if isinstance(v, dict) else str(v)
                for k, v in text.items()}
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z0-9_]+):(.*)$", line.strip())
        if not m:
            continue
        k, v = m.groups()
        if "=" in v:
            out[k] = dict(kv.split("=", 1) for kv in v.split(","))
        else:
            out[k] = v
    return out


def tiered_toml(port, extra_tier="", tenants="") -> str:
    return f"""
[server]
bind = "127.0.0.1"
port = {port}

[memory]
maxmemory = "8MiB"
page_size = "64KiB"

[tier]
slow_backend = "emulated:50"
fast_share = 0.2
{extra_tier}
{tenants}
"""


def fast_free(c) -> float:
    return float(tiers_info(c)["tier_fast"]["free_share"])


def write_paced(c, keys, batch=100, watch=None):
    """SETs in pipelined batches; after each, waits for the worker thread to bring the fast tier's
    free space back above the low watermark (`watch`: the client that may read it, the admin's in
    a multi-tenant server). A batch of 100 items is ~1.5% of this fast tier, less than the low
    watermark, so a batch never finds the fast tier full: a load faster than the demotion worker
    makes the fast tier evict reactively, which is sdTMM's design, not a migration loss."""
    watch = watch or c
    for i in range(0, len(keys), batch):
        with c.pipeline(transaction=False) as p:
            for k in keys[i:i + batch]:
                p.set(k, value_of(k))
            p.execute()
        wait_until(lambda: fast_free(watch) >= LOW, timeout=10, what="fast tier above the low watermark")


def settle(c):
    """Waits until the worker thread has stopped moving items (two reads 100 ms apart agree)."""
    import time

    def still():
        a = tiers_info(c)["tier_demotions"], tiers_info(c)["tier_promotions"]
        time.sleep(0.1)
        return a == (tiers_info(c)["tier_demotions"], tiers_info(c)["tier_promotions"])

    wait_until(still, timeout=10, what="the tier workers idle")


def make_cold(c, key):
    """Makes `key` go cold until the demotion worker moves it to the slow tier: other keys are
    written and then read (each read moves its key to the head of the fast list), so the
    untouched key drifts to the tail; fresh writes then make the worker demote the tail.
    (Without reads, sdTMM's insertion point 1/4 from the tail keeps the newest writes nearest
    the tail: they are the first demoted.)"""
    fillers = [f"filler{i}" for i in range(6000)]
    write_paced(c, fillers)
    for i in range(0, len(fillers), 1000):
        c.mget(fillers[i:i + 1000])
    write_paced(c, [f"fresh{i}" for i in range(3000)])
    wait_until(lambda: c.execute_command("OBJECT", "TIER", key) == "slow", timeout=10,
               what=f"{key} demoted")


def zipf_sampler(n: int, alpha: float, seed: int):
    weights = [1.0 / (i + 1) ** alpha for i in range(n)]
    cum = []
    s = 0.0
    for w in weights:
        s += w
        cum.append(s)
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)  # hot keys spread over the write order, so many start cold in the slow tier

    def draw():
        return order[min(bisect.bisect_left(cum, rng.random() * s), n - 1)]

    return draw


def start_two_port_tenants(start_locus_toml, main, pa, pb, extra=""):
    """A tiered server with tenants `alpha` (port `pa`) and `beta` (`pb`) and an admin `root`;
    `extra` is more configuration (a controller). Returns the clients of alpha, beta and root."""
    tenants = f"""
[tenancy]
mode = "port"

[admin]
user = "root"
password = "root-pw"

{extra}
[[tenant]]
name = "alpha"
port = {pa}

[[tenant]]
name = "beta"
port = {pb}
"""
    start_locus_toml(tiered_toml(main, tenants=tenants), pa)
    return client(pa), client(pb), client(pa, username="root", password="root-pw")


@pytest.fixture
def tiered(start_locus_toml):
    port = free_port()
    srv = start_locus_toml(tiered_toml(port), port)
    return srv, client(port)


def test_zipf_load_migrates_both_ways_and_loses_nothing(tiered):
    srv, c = tiered
    n = 12_000
    keys = [f"k{i}" for i in range(n)]
    write_paced(c, keys)
    after_writes = tiers_info(c)
    assert int(after_writes["tier_demotions"]) > 0, after_writes
    draw = zipf_sampler(n, 0.99, seed=7)
    promos = [int(after_writes["tier_promotions"])]
    demos = [int(after_writes["tier_demotions"])]
    for _ in range(4):
        with c.pipeline(transaction=False) as p:
            for _ in range(20_000):
                p.get(keys[draw()])
            got = p.execute()
        assert all(v is not None for v in got), "a key written earlier is missing"
        # New keys keep the fast tier under pressure, so demotions go on alongside promotions.
        fresh = [f"new{len(demos)}-{i}" for i in range(800)]
        write_paced(c, fresh)
        keys_written = fresh  # noqa: F841 (checked below with the rest)
        keys.extend(fresh)
        info = tiers_info(c)
        promos.append(int(info["tier_promotions"]))
        demos.append(int(info["tier_demotions"]))
    assert promos[-1] > promos[0] and demos[-1] > demos[0], (promos, demos)
    # Hits came from both tiers, and the fast tier served the larger part under Zipf.
    info = tiers_info(c)
    fast_hits, slow_hits = int(info["tier_fast"]["hits"]), int(info["tier_slow"]["hits"])
    assert slow_hits > 0 and fast_hits > slow_hits, info
    # No loss: nothing was evicted, and every key reads back with its own value.
    for tier in ("tier_fast", "tier_slow"):
        for cause in ("evictions_reactive", "evictions_proactive", "evictions_page_reclaim"):
            assert info[tier][cause] == "0", (tier, cause, info)
    assert c.dbsize() == len(keys)
    for i in range(0, len(keys), 2000):
        chunk = keys[i:i + 2000]
        assert c.mget(chunk) == [value_of(k) for k in chunk]
    assert int(info["tier_fast"]["items"]) + int(info["tier_slow"]["items"]) == len(keys)
    assert int(info["tier_emulated_delay_usec"]) > 0, "slow-tier hits spent no emulated delay"


def test_fast_tier_free_space_settles_between_the_watermarks(tiered):
    srv, c = tiered
    keys = [f"w{i}" for i in range(10_000)]
    write_paced(c, keys)
    draw = zipf_sampler(len(keys), 0.99, seed=3)
    with c.pipeline(transaction=False) as p:
        for _ in range(20_000):
            p.get(keys[draw()])
        p.execute()
    # Once the load stops, the worker thread's steps leave the fast tier's free share at or
    # above the low watermark and not far past the high one (a batch of 32 items is at most
    # ~1% of this fast tier).
    wait_until(lambda: LOW <= fast_free(c) <= HIGH + 0.02, timeout=10,
               what=f"fast free share in [{LOW}, {HIGH} + one batch]")
    info = tiers_info(c)
    assert int(info["tier_fast"]["pages"]) <= int(info["tier_fast"]["budget_pages"])
    assert int(info["tier_slow"]["pages"]) <= int(info["tier_slow"]["budget_pages"])
    assert int(info["tier_worker_thread_steps"]) > 0


def test_object_tier_follows_a_key_cold_then_hot(tiered):
    srv, c = tiered
    c.set("hot-later", value_of("hot-later"))
    assert c.execute_command("OBJECT", "TIER", "hot-later") == "fast"
    assert c.execute_command("OBJECT", "TIER", "no-such-key") is None
    make_cold(c, "hot-later")
    # OBJECT TIER does not touch the key: asking again changes nothing.
    assert c.execute_command("OBJECT", "TIER", "hot-later") == "slow"

    # Hot: re-read it back to back (a reuse time far below the fast tier's mean).
    def reread_and_check():
        for _ in range(5):
            assert c.get("hot-later") == value_of("hot-later")
        return c.execute_command("OBJECT", "TIER", "hot-later") == "fast"

    wait_until(reread_and_check, timeout=10, what="the hot key promoted")
    assert c.execute_command("OBJECT", "HELP")[-4].startswith("TIER <key>")


def test_info_tiers_shows_a_tenant_only_its_own_figures(start_locus_toml):
    main, pa, pb = free_ports(3)
    ca, cb, root = start_two_port_tenants(start_locus_toml, main, pa, pb)
    write_paced(ca, [f"a{i}" for i in range(3000)], watch=root)
    cb.set("b0", value_of("b0"))
    cb.get("b0")
    ia, ib = tiers_info(ca), tiers_info(cb)
    assert ia["tiers"] == "2"
    lines_a = [k for k in ia if k.startswith("tenant_")]
    assert lines_a and all(k.startswith("tenant_alpha") for k in lines_a), ia
    assert all(k.startswith("tenant_beta") for k in ib if k.startswith("tenant_")), ib
    # Server-wide figures (every tenant's pages, items, hits, free space) are the admin's only.
    for info in (ia, ib):
        assert set(info["tier_fast"]) == {"budget_pages", "budget_bytes"}, info["tier_fast"]
        assert "tier_promotions" not in info
    assert int(ib["tenant_beta_fast"]["items"]) + int(ib["tenant_beta_slow"]["items"]) == 1
    assert int(ib["tenant_beta_fast"]["hits"]) + int(ib["tenant_beta_slow"]["hits"]) == 1
    ir = tiers_info(root)
    assert {"tenant_alpha", "tenant_beta"} <= set(ir)
    total = sum(int(ir[f"tenant_{t}_{tier}"]["items"]) for t in ("alpha", "beta") for tier in ("fast", "slow"))
    assert total == 3001
    assert int(ir["tier_fast"]["items"]) + int(ir["tier_slow"]["items"]) == 3001
    # OBJECT TIER reads the caller's own keyspace only.
    assert cb.execute_command("OBJECT", "TIER", "a0") is None


def test_untiered_server_shows_no_tiers(start_locus_toml):
    port = free_port()
    start_locus_toml(f'[server]\nbind = "127.0.0.1"\nport = {port}\n', port)
    c = client(port)
    c.set("k", "v")
    assert tiers_info(c) == {"tiers": "0"}
    with pytest.raises(redis.ResponseError, match="no memory tiers"):
        c.execute_command("OBJECT", "TIER", "k")
    assert "tier-slow-backend" not in c.config_get("tier-*")


def test_config_get_shows_the_tier_settings(tiered):
    srv, c = tiered
    got = c.config_get("tier-*")
    assert got["tier-slow-backend"] == "emulated:50"
    assert float(got["tier-fast-share"]) == 0.2
    assert float(got["tier-low-watermark"]) == LOW and float(got["tier-high-watermark"]) == HIGH
    assert got["tier-promotion"] == "reuse"
    assert got["tier-fast-insertion"] == "0.25" and got["tier-slow-insertion"] == "0.5"
    assert int(got["tier-fast-memory"]) == 25 * 64 * 1024  # floor(128 pages * 0.2)
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        c.config_set("tier-fast-share", "0.5")
    assert c.config_get("tier-fast-share")["tier-fast-share"] == "0.2"


def test_plain_emulated_measures_its_delay(start_locus_toml):
    port = free_port()
    toml = tiered_toml(port).replace('slow_backend = "emulated:50"', 'slow_backend = "emulated"')
    start_locus_toml(toml, port)
    backend = client(port).config_get("tier-slow-backend")["tier-slow-backend"]
    ns = int(backend.removeprefix("emulated:"))
    assert 5 <= ns < 5000, backend


def serve_with(toml: str, *args):
    cfg = new_workdir() / "locus.toml"
    cfg.write_text(toml)
    return subprocess.run([locus_bin(), "serve", "--config", str(cfg), *args],
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("tier,needles", [
    ('fast_memory = "16MiB"', ["tier.fast_memory", "below memory.maxmemory"]),
    ("fast_share = 1.5", ["tier.fast_share"]),
    ("low_watermark = 0.1\nhigh_watermark = 0.05", ["tier.low_watermark", "out of order"]),
    ('slow_backend = "numa:4096"', ["tier.slow_backend", "NUMA node 4096 does not exist"]),
    ('slow_backend = "file:/proc/no/such/dir/slow"', ["tier.slow_backend", "cannot be opened for writing"]),
    ('slow_backend = "dram:1"', ["tier.slow_backend", "unknown backend"]),
    ("fast_sharee = 0.3", ["fast_sharee", "unknown field"]),
    ('fast_share = "lots"', ["fast_share", "expected f64"]),
    ('fast_share = 0.3\nfast_memory = "1MiB"', ["tier.fast_memory", "not both"]),
    ("promotion_batch = 0", ["tier.promotion_batch"]),
])
def test_bad_tier_config_stops_the_start_naming_the_key(tier, needles):
    toml = tiered_toml(free_port()).replace('slow_backend = "emulated:50"\nfast_share = 0.2', tier)
    p = serve_with(toml)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "panicked" not in p.stderr
    for n in needles:
        assert n in p.stderr, (n, p.stderr)


def test_cli_flags_turn_tiers_on():
    p = subprocess.run([locus_bin(), "serve", "--maxmemory", "64MiB", "--fast-memory", "16MiB",
                        "--tier-backend", "emulated:120", "--print-config"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "[tier]" in p.stdout and 'slow_backend = "emulated:120"' in p.stdout
    assert 'fast_memory = "16MiB"' in p.stdout
    bad = subprocess.run([locus_bin(), "serve", "--maxmemory", "64MiB", "--fast-memory", "64MiB",
                          "--port", str(free_port())], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "tier.fast_memory" in bad.stderr, bad.stderr


def test_metrics_and_live_page_api_show_the_tiers(start_locus_toml):
    import json
    import urllib.request

    port, pm = free_ports(2)
    toml = tiered_toml(port) + f'\n[metrics]\nbind = "127.0.0.1:{pm}"\n'
    start_locus_toml(toml, port)
    c = client(port)
    write_paced(c, [f"m{i}" for i in range(8000)])
    c.get("m0")
    c.get("m7999")
    settle(c)
    text = urllib.request.urlopen(f"http://127.0.0.1:{pm}/metrics", timeout=10).read().decode()
    info = tiers_info(c)

    def metric(name, **labels):
        want = ",".join(f'{k}="{v}"' for k, v in labels.items())
        for line in text.splitlines():
            if line.startswith(name + "{" + want + "}") or (not labels and line.startswith(name + " ")):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"{name}{{{want}}} not in /metrics")

    for tier in ("fast", "slow"):
        assert metric("locus_tier_budget_bytes", tier=tier) == int(info[f"tier_{tier}"]["budget_bytes"])
        assert metric("locus_tier_items", tenant="default", tier=tier) == int(info[f"tier_{tier}"]["items"])
        assert metric("locus_tier_hits_total", tenant="default", tier=tier) == int(info[f"tier_{tier}"]["hits"])
        assert metric("locus_tier_evictions_total", tenant="default", tier=tier, cause="reactive") == 0
    assert metric("locus_tier_demotions_total", tenant="default") == int(info["tier_demotions"]) > 0
    api = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{pm}/api/tenants", timeout=10).read())
    t = api["tenants"][0]["tiers"]
    assert t["fast"]["items"] + t["slow"]["items"] == 8000
    assert t["demotions"] == int(info["tier_demotions"])


def test_a_slow_tier_hit_spends_the_emulated_delay(start_locus_toml):
    """A lower bound only (a delay cannot make a reply faster): with a 2 ms emulated delay, a GET
    served from the slow tier answers no sooner than 2 ms after it was sent."""
    import time

    port = free_port()
    start_locus_toml(tiered_toml(port).replace("emulated:50", "emulated:2000000"), port)
    c = client(port)
    c.set("cold", value_of("cold"))
    make_cold(c, "cold")
    spent = int(tiers_info(c)["tier_emulated_delay_usec"])
    start = time.monotonic()
    assert c.get("cold") == value_of("cold")
    assert time.monotonic() - start >= 0.002
    assert int(tiers_info(c)["tier_emulated_delay_usec"]) - spent == 2000


def test_other_reads_and_in_place_writes_of_slow_items_spend_the_delay(start_locus_toml):
    """Every access to a slow-tier item is charged, not only GET: GETRANGE and STRLEN of a
    demoted string, and a SET that rewrites it where it lies (INFO's count; one access each)."""
    port = free_port()
    # Promotion off: the reads must not bring the item back before the SET rewrites it.
    toml = tiered_toml(port, extra_tier='promotion = "off"')
    start_locus_toml(toml.replace("emulated:50", "emulated:2000000"), port)
    c = client(port)
    c.set("s", value_of("s"))
    make_cold(c, "s")
    spent = int(tiers_info(c)["tier_emulated_delay_usec"])
    assert c.getrange("s", 0, 3) == value_of("s")[:4]
    assert c.strlen("s") == VALUE_LEN
    after_reads = int(tiers_info(c)["tier_emulated_delay_usec"])
    assert after_reads - spent == 2 * 2000, (spent, after_reads)
    c.set("s", value_of("s").upper())
    after_set = int(tiers_info(c)["tier_emulated_delay_usec"])
    # A same-size SET rewrites the item in place, in the slow tier.
    assert c.execute_command("OBJECT", "TIER", "s") == "slow"
    assert after_set - after_reads == 2000, (after_reads, after_set)
    assert c.get("s") == value_of("s").upper()


def test_a_memcached_get_of_a_slow_tier_item_spends_the_delay_too(start_locus_toml):
    """The memcached listener serves the same engine: its GET of a slow-tier item is charged the
    same way (a lower bound and INFO's count, as above)."""
    import socket
    import time

    port, mport = free_ports(2)
    toml = tiered_toml(port).replace("emulated:50", "emulated:2000000") + f"\n[memcached]\nport = {mport}\n"
    start_locus_toml(toml, port)
    c = client(port)
    mc = socket.create_connection((HOST, mport), timeout=10)
    value = value_of("mcold").encode()
    mc.sendall(b"set mcold 0 0 %d\r\n%s\r\n" % (len(value), value))
    assert mc.recv(100) == b"STORED\r\n"
    make_cold(c, "mcold")
    spent = int(tiers_info(c)["tier_emulated_delay_usec"])
    start = time.monotonic()
    mc.sendall(b"get mcold\r\n")
    want = b"VALUE mcold 0 %d\r\n%s\r\nEND\r\n" % (len(value), value)
    got = b""
    while len(got) < len(want):
        got += mc.recv(1 << 16)
    assert got == want
    assert time.monotonic() - start >= 0.002
    assert int(tiers_info(c)["tier_emulated_delay_usec"]) - spent == 2000
    mc.close()


def numa_nodes() -> list[int]:
    """The NUMA nodes Linux shows (sysfs), [0] where it shows none."""
    base = "/sys/devices/system/node"
    try:
        nodes = sorted(int(d[4:]) for d in os.listdir(base) if d.startswith("node") and d[4:].isdigit())
    except OSError:
        nodes = []
    return nodes or [0]


@pytest.mark.parametrize("backend", ["file", "numa0", "numa1"])
def test_real_backends_hold_the_slow_tier_through_migrations(tmp_path, backend):
    """`file:` and `numa:` in the server: the slow tier's pages are a shared file mapping / memory
    bound to a node; under a Zipf load items move both ways and every key reads back its own value.
    The file is the slow budget's size while the server runs and is gone after it stops."""
    if backend == "numa1" and len(numa_nodes()) < 2:
        pytest.skip("numa:1 needs a second NUMA node; this machine shows one "
                    f"({numa_nodes()}); numa:0 is tested instead")
    path = tmp_path / "slow.tier"
    spec = {"file": f"file:{path}", "numa0": "numa:0", "numa1": "numa:1"}[backend]
    port = free_port()
    toml = tiered_toml(port).replace('slow_backend = "emulated:50"', f'slow_backend = "{spec}"')
    srv = start_locus(toml, port)
    try:
        check_real_backend(srv, port, backend, path)
    finally:
        alive = srv.alive()
        srv.stop()
    assert alive, f"locus died during the test:\n{srv.log_tail()}"
    if backend == "file":
        assert not os.path.exists(path), "the slow tier's file outlived the server"


def check_real_backend(srv, port, backend, path):
    c = client(port)
    info = tiers_info(c)
    if backend == "file":
        slow_budget = int(info["tier_slow"]["budget_pages"])
        assert slow_budget > 0, info
        assert path.exists() and path.stat().st_size == slow_budget * 64 * 1024, \
            (path.stat().st_size if path.exists() else None, slow_budget)
    n = 10_000
    keys = [f"b{i}" for i in range(n)]
    write_paced(c, keys)
    draw = zipf_sampler(n, 0.99, seed=11)
    with c.pipeline(transaction=False) as p:
        for _ in range(20_000):
            p.get(keys[draw()])
        assert all(v is not None for v in p.execute())
    info = tiers_info(c)
    assert int(info["tier_demotions"]) > 0 and int(info["tier_promotions"]) > 0, info
    assert int(info["tier_slow"]["items"]) > 0, info
    # Real backends cost what the memory costs: no emulated delay is spun.
    assert int(info["tier_emulated_delay_usec"]) == 0, info
    for i in range(0, n, 2000):
        chunk = keys[i:i + 2000]
        assert c.mget(chunk) == [value_of(k) for k in chunk]
    slow_key = next(k for k in keys if c.execute_command("OBJECT", "TIER", k) == "slow")
    assert c.get(slow_key) == value_of(slow_key)
    c.close()


def test_kredis_gives_the_hot_tenant_the_fast_tier_and_the_scanner_little(start_locus_toml):
    """sdTMM's multi-tenant fast-tier partitioning (section 5.1.5) live: `[controller] kredis`
    plans each tenant's fast-tier target from its KRR curves and DP over the fast tier's pages,
    and the demotion worker enforces it. alpha reads 1,500 keys Zipf-hot (a few pages: its
    working set fits the 25-page fast tier); beta scans 12,000 keys in a loop (several times the
    fast tier, so a fast page saves it nothing). alpha's target and fast hit share come out above
    beta's; each tenant sees its own target only, the admin both."""
    main, pa, pb = free_ports(3)
    controller = '[controller]\nname = "kredis"\ninterval = 2000\n'
    ca, cb, root = start_two_port_tenants(start_locus_toml, main, pa, pb, controller)
    hot = zipf_sampler(1500, 1.0, seed=5)
    scan = iter(range(10**9))

    def cache_aside(c, keys):
        with c.pipeline(transaction=False) as p:
            for k in keys:
                p.get(k)
            got = p.execute()
        missed = [k for k, v in zip(keys, got) if v is None]
        if missed:
            with c.pipeline(transaction=False) as p:
                for k in missed:
                    p.set(k, value_of(k))
                p.execute()

    for _ in range(180):  # 90k GETs in all, beta's loop read 3.75 times
        cache_aside(ca, [f"h{hot()}" for _ in range(250)])
        cache_aside(cb, [f"s{next(scan) % 12_000}" for _ in range(250)])
    ir = tiers_info(root)
    target = {t: ir[f"tenant_{t}"]["fast_target_bytes"] for t in ("alpha", "beta")}
    assert "none" not in target.values(), f"kredis set no fast targets: {target}"
    assert int(target["alpha"]) > int(target["beta"]), target
    budget = int(ir["tier_fast"]["budget_bytes"])
    assert int(target["alpha"]) + int(target["beta"]) <= budget, (target, budget)

    def fast_share(info, t):
        f, s = int(info[f"tenant_{t}_fast"]["hits"]), int(info[f"tenant_{t}_slow"]["hits"])
        return f / max(f + s, 1)

    assert fast_share(ir, "alpha") > fast_share(ir, "beta"), ir
    # Each tenant sees its own target, and only its own.
    ia, ib = tiers_info(ca), tiers_info(cb)
    assert ia["tenant_alpha"]["fast_target_bytes"] == target["alpha"]
    assert "tenant_beta" not in ia and "tenant_alpha" not in ib
    assert ib["tenant_beta"]["fast_target_bytes"] == target["beta"]
