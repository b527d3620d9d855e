"""pRedis(auto)'s per-key penalty classes inside one tenant (issue 14, acceptance 3), live.

One tenant whose keys have two miss costs (half 0.2 ms, half 4 ms, the same Zipf locality),
replayed look-aside with `locus replay` (`delay:trace`: each request's penalty column) against
`locus serve` with memory for ~40% of the working set:

* with `penalty_classes` and the `predis` controller, the server measures each key's GET miss →
  SET gap, puts the dear keys in a class pool of their own, and INFO shows it (per class: keys,
  bytes, target, measured penalty, hits, misses), to the owning tenant only;
* the dear keys keep a larger share of their keys in the cache than the cheap ones (counted key by
  key with EXISTS; under `shared` the two shares are equal), and the miss cost the client
  pays per GET (backend calls × their measured mean: the priced hit ratios) is lower than under
  `shared` (free competition, Redis's LRU) by a margin measured over 15 runs; and the live mean
  latency is lower than under `shared` in the majority of up to three interleaved pairs of runs
  (lower in 14 of 15 single runs on this loaded 2-core machine, 0.44 to 1.11 of shared's; the
  figures with their spread are bench/live/classes.py's);
* with `penalty_classes` off the same test fails (the classes are what helps: one pool with one
  mean penalty cannot favour the dear keys).

Locus-only (the classes are Locus's); they start their own servers, whatever `--peer` says.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import redis

import harness
import two_cost_trace

KEYS = 6000
VALUE = 1000
CHEAP_US, DEAR_US = 200, 4000


def write_trace(path: Path, n: int) -> None:
    two_cost_trace.write_trace(path, n, KEYS, VALUE, CHEAP_US, DEAR_US)


def conf(port: int, controller: str, classes: bool) -> str:
    extra = "penalty_classes = 4\n" if classes else ""
    return f"""[server]
port = {port}
[memory]
maxmemory = "3MiB"
page_size = "64KiB"
[controller]
name = "{controller}"
interval = "500ms"
[controller.settings]
""" + ("rate = 0.1\n" if controller == "predis" else "") + f"""
[[tenant]]
name = "app"
{extra}"""


def class_lines(port: int) -> dict[str, dict[str, str]]:
    info = redis.Redis(port=port, decode_responses=True).execute_command("INFO", "locus")
    if isinstance(info, dict):
        # redis-py parses INFO into a dict of `name: value`.
        lines = {k: v for k, v in info.items() if k.startswith("class_")}
        out = {}
        for k, v in lines.items():
            out[k] = v if isinstance(v, dict) else dict(x.split("=", 1) for x in str(v).split(","))
        return {k: {a: str(b) for a, b in v.items()} for k, v in out.items()}
    out = {}
    for line in info.splitlines():
        if line.startswith("class_"):
            name, rest = line.split(":", 1)
            out[name] = dict(x.split("=", 1) for x in rest.split(","))
    return out


def run(trace: Path, controller: str, classes: bool, warm: int) -> tuple[dict, dict]:
    port = harness.free_port()
    srv = harness.start_locus(conf(port, controller, classes), port)
    try:
        p = subprocess.run(
            [harness.locus_bin(), "replay", str(trace), "--target", f"redis://127.0.0.1:{port}",
             "--backend", "0=delay:trace", "--connections", "16", "--warmup", str(warm),
             "--json", "--quiet"],
            capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout), class_lines(port), held_by_cost(port)
    finally:
        srv.stop()


def held_by_cost(port: int) -> tuple[float, float]:
    """The share of the cheap keys and of the dear keys the cache holds at the end (the replay
    names trace key `i` of tenant 0 `t0:k<i>`; EXISTS touches nothing)."""
    c = redis.Redis(port=port)
    pipe = c.pipeline(transaction=False)
    for k in range(KEYS):
        pipe.exists(f"t0:k{k}")
    present = pipe.execute()
    cheap = sum(present[k] for k in range(0, KEYS, 2)) / (KEYS / 2)
    dear = sum(present[k] for k in range(1, KEYS, 2)) / (KEYS / 2)
    return cheap, dear


@pytest.fixture(scope="module")
def trace():
    d = Path(tempfile.mkdtemp(prefix="locus-classes-"))
    write_trace(d / "two_cost.csv", 120_000)
    yield d / "two_cost.csv"
    shutil.rmtree(d, ignore_errors=True)


def test_predis_with_classes_keeps_the_dear_keys_and_beats_shared(trace):
    warm = 60_000
    shared, no_classes, shared_held = run(trace, "shared", False, warm)
    assert no_classes == {}, "no class lines without penalty_classes"
    predis, classes, (cheap_held, dear_held) = run(trace, "predis", True, warm)
    priced = lambda r: (r["overall"]["counters"]["backend_calls"]
                        * r["overall"]["backend"]["mean_us"] / r["overall"]["counters"]["gets"])
    mean = lambda r: r["overall"]["latency"]["mean_us"]
    print(f"held: cheap {cheap_held:.3f} dear {dear_held:.3f} (shared: {shared_held[0]:.3f} "
          f"{shared_held[1]:.3f}); mean latency: shared {mean(shared):.0f} us, predis "
          f"{mean(predis):.0f} us; backend time per GET: shared {priced(shared):.0f} us, predis "
          f"{priced(predis):.0f} us; classes {classes}")
    # Measured gaps scatter over neighbouring ranges (the client's own time, the scheduler: the
    # paper's Figure 7a), so the cheap keys may fill more than one class pool, and at the cap a
    # range may merge with the dear keys' one.
    measured = [c for c in classes.values() if c["range_us"] != "default"]
    assert 2 <= len(measured) <= 4, classes

    def bounds(c):
        return tuple(map(float, c["range_us"].split("-")))

    def covers(c, us):
        lo, hi = bounds(c)
        return lo <= us < hi

    # The dear keys have a class pool of their own (its range covers 4 ms, the cheap keys' 0.2 ms
    # is in another), and its measured penalty is theirs: 4 ms plus the client's and the
    # scheduler's time, spikes included.
    dear = [c for c in measured if covers(c, DEAR_US)]
    assert len(dear) == 1 and not covers(dear[0], CHEAP_US), classes
    # The cheap keys hold a pool below the dear one. Not necessarily the range of 0.2 ms itself:
    # a gap is measured from the GET's miss to the SET, and on a loaded machine the client's and
    # the scheduler's time lift the cheap keys' gaps into the next ranges (310-630 µs seen).
    assert any(int(c["keys"]) and bounds(c)[1] <= bounds(dear[0])[0] for c in measured), classes
    assert 2000 < float(dear[0]["penalty_us"]) < 20000, dear
    # Under shared both costs hold about the same share (counted key by key).
    assert abs(shared_held[0] - shared_held[1]) < 0.1, shared_held
    # The claims, each over pairs of runs (shared, then predis with classes):
    # * the dear keys hold a larger share of their keys than the cheap ones, by 0.1 or more
    #   (a pool's `keys` mixes the cheap keys measured slow into the dear range at times, so the
    #   shares are counted key by key);
    # * the miss cost the client paid per GET (its backend calls × their mean time: the priced
    #   hit ratios, which the live mean latency adds queueing to) is under 0.9 of shared's;
    # * the live mean latency (acceptance 3) is lower than shared's.
    # Over 15 runs on the loaded 2-core machine (load 6-7) predis's priced cost was 0.38-0.83 of
    # shared's and its latency lower in 14 of 15 (0.44-1.11 of shared's); with CI's own load
    # beside it one pair can miss any of the three (seen: a priced cost 1.03 of shared's, a share
    # gap of 0.104). So pairs run interleaved until each claim has two wins or two losses (at
    # most three pairs), and each must win the majority. Without the classes (one pool, one mean
    # penalty) the shares and the priced cost are shared's, and this fails.
    pairs = [((cheap_held, dear_held), priced(predis) / priced(shared), mean(predis) / mean(shared))]
    claims = [lambda p: p[0][1] > p[0][0] + 0.1, lambda p: p[1] < 0.9, lambda p: p[2] < 1]

    def decided(claim):
        won = sum(claim(p) for p in pairs)
        return won >= 2 or len(pairs) - won >= 2

    while not all(decided(c) for c in claims):
        s_run = run(trace, "shared", False, warm)[0]
        p_run, _, held = run(trace, "predis", True, warm)
        pairs.append((held, priced(p_run) / priced(s_run), mean(p_run) / mean(s_run)))
    shown = [(f"{c:.3f}/{d:.3f}", round(pr, 3), round(lat, 3)) for (c, d), pr, lat in pairs]
    print(f"per pair (cheap/dear share held, backend time per GET and mean latency as a "
          f"fraction of shared's): {shown}")
    for what, claim in zip(["dear share > cheap + 0.1", "priced < 0.9", "latency < 1"], claims):
        assert sum(claim(p) for p in pairs) >= 2, (what, shown)
