"""The live page of the `[metrics]` listener in a real browser (issue 17, Locus only).

A server with the `kredis` controller (KRR curves per K, pages by dynamic programming) serves two
tenants in port mode: `big` loops cache-aside over more keys than memory holds, `small` over a set
that fits in a few pages. While that traffic runs, Debian's headless Chromium loads `/` from the
metrics listener, lets the page's script poll `/api/tenants` and `/api/curves`, and the test reads
the rendered DOM: every tenant's four charts (miss ratio curve, allocation and target, hit ratio,
miss penalty) hold drawn points, the curve's caption names the model, and the decisions table has
rows. A screenshot is kept in `<target>/test-output/live-page/live-page.png`.

Chromium is installed by scripts/install-deps.sh; without it the test is skipped with a reason
(pytest -ra lists it). It runs with a fresh profile directory, no sandbox (root in CI), and every
network feature that would reach beyond loopback switched off.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import redis

from conftest import no_retry
from harness import HOST, free_ports

pytestmark = pytest.mark.locus_only

VALUE = "v" * 1000
ROOT = Path(__file__).resolve().parents[2]


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def output_dir() -> Path:
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    base = Path(target) if os.path.isabs(target) else ROOT / target
    out = base / "test-output" / "live-page"
    out.mkdir(parents=True, exist_ok=True)
    return out


def config(ports):
    main, big, small, metrics = ports
    return "\n".join([
        "[server]", 'bind = "127.0.0.1"', f"port = {main}",
        "[memory]", 'maxmemory = "4MiB"', 'page_size = "64KiB"',
        "[tenancy]", 'mode = "port"',
        "[admin]", 'user = "root"', 'password = "root-pw"',
        "[controller]", 'name = "kredis"', "interval = 2000",
        "[controller.settings]", "rate = 1.0", "min_gets = 500",
        "[metrics]", f'bind = "127.0.0.1:{metrics}"', 'sample_interval = "250ms"',
        "[[tenant]]", 'name = "big"', f"port = {big}", "penalty_us = 1000",
        "[[tenant]]", 'name = "small"', f"port = {small}", "penalty_us = 1000",
    ]) + "\n"


def client(port):
    return redis.Redis(host=HOST, port=port, decode_responses=True, socket_timeout=10, retry=no_retry())


def cache_aside(c, keys, rng, gets, prefix):
    picked = [rng.randrange(keys) for _ in range(gets)]
    with c.pipeline(transaction=False) as p:
        for k in picked:
            p.get(f"{prefix}{k}")
        got = p.execute()
    misses = [k for k, v in zip(picked, got) if v is None]
    if misses:
        with c.pipeline(transaction=False) as p:
            for k in misses:
                p.set(f"{prefix}{k}", VALUE)
            p.execute()


def browser(chrome, profile, *args, timeout=90):
    argv = [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--disable-extensions", "--disable-dev-shm-usage",
            "--metrics-recording-only", "--no-default-browser-check", "--hide-scrollbars",
            f"--user-data-dir={profile}", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def attr(tag: str, name: str) -> str | None:
    m = re.search(rf'\b{name}="([^"]*)"', tag)
    return m.group(1) if m else None


def test_live_page_renders_every_tenant_with_data(start_locus_toml, tmp_path):
    chrome = chromium()
    if not chrome:
        pytest.skip("chromium is not installed (scripts/install-deps.sh installs Debian's chromium): "
                    "the live page was NOT checked in a browser")
    ports = free_ports(4)
    start_locus_toml(config(ports), ports[1])
    big, small = client(ports[1]), client(ports[2])
    url = f"http://127.0.0.1:{ports[3]}/"

    # Warm up until the controller has decided with curves, then keep the traffic going (in a
    # thread, bounded in rounds and time) while the browser looks.
    rng = random.Random(11)
    for _ in range(16):
        cache_aside(big, 6000, rng, 500, "k")
        cache_aside(small, 400, rng, 500, "s")
    stop = threading.Event()

    def traffic():
        r = random.Random(12)
        deadline = time.monotonic() + 60
        for _ in range(400):
            if stop.is_set() or time.monotonic() > deadline:
                return
            cache_aside(big, 6000, r, 200, "k")
            cache_aside(small, 400, r, 200, "s")

    t = threading.Thread(target=traffic, daemon=True)
    t.start()
    try:
        profile = tempfile.mkdtemp(prefix="locus-chromium-", dir=tmp_path)
        # The page polls every 1.5 s: a virtual-time budget of 5 s lets it refresh a few times.
        out = browser(chrome, profile, "--virtual-time-budget=5000", "--dump-dom", url)
        assert out.returncode == 0, out.stderr[-3000:]
        dom = out.stdout
        shot = output_dir() / "live-page.png"
        if shot.exists():
            shot.unlink()
        profile2 = tempfile.mkdtemp(prefix="locus-chromium-", dir=tmp_path)
        out2 = browser(chrome, profile2, "--virtual-time-budget=5000", "--window-size=1400,1700",
                       f"--screenshot={shot}", url)
        assert out2.returncode == 0, out2.stderr[-3000:]
    finally:
        stop.set()
        t.join(timeout=30)

    (output_dir() / "live-page.html").write_text(dom)
    body = re.search(r"<body[^>]*>", dom)
    assert body, dom[:2000]
    assert attr(body.group(0), "data-ready") == "1", body.group(0)
    assert int(attr(body.group(0), "data-updates")) >= 1
    assert attr(body.group(0), "data-tenants") == "2"
    assert int(attr(body.group(0), "data-decisions")) >= 1
    status = re.search(r'<span id="status"[^>]*>([^<]*)<', dom)
    assert status and 'class="ok"' in status.group(0), status and status.group(0)

    charts = re.findall(r"<svg[^>]*data-chart=[^>]*>", dom)
    seen = {}
    for tag in charts:
        seen[(attr(tag, "data-tenant"), attr(tag, "data-chart"))] = int(attr(tag, "data-points") or 0)
    for tenant in ("big", "small"):
        for kind in ("mrc", "allocation", "hit-ratio", "miss-penalty"):
            assert (tenant, kind) in seen, (tenant, kind, sorted(seen))
            assert seen[(tenant, kind)] > 0, f"{kind} chart of {tenant} has no points: {seen}"
    # The curve's caption names the model (kredis records KRR curves per K and their merge).
    assert re.search(r"Miss ratio curve</b> — (mmrc|krr K=\d+)", dom), "no model named in the MRC caption"
    assert dom.count("polyline") >= 8
    # The decisions table.
    assert re.search(r"<table>.*<tbody><tr>", dom, re.S), "no decision rows"

    assert shot.exists() and shot.stat().st_size > 20_000, "screenshot missing or blank"
    print(f"live page screenshot: {shot}")
