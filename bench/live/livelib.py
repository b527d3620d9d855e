"""Shared pieces of the live experiments (bench/live/ycsb.py, bench/live/kredis4.py).

* `make_trace`: a seeded `locus trace generate` trace (Locus CSV), optionally with its tenant
  column rewritten to a key's cost class (pRedis's keys split by hash over two backends);
* `calibrate`: the `maxmemory` at which a server holds a target number of the run's keys, found
  as bench/fidelity.py finds it (fill a fresh server with 3x the target of distinct keys of the
  run's key and value sizes, count what stayed, adjust), here by secant steps so that a few
  probes suffice;
* `replay`: one `locus replay` run against a fresh redis-server or Locus, stopped afterwards;
* `simulate`: `locus simulate` on the same trace (tenants = the trace's tenant column) with each
  tenant's measured backend mean as its penalty and the measured hit time: the model's prediction.

Servers are started by tests/python/harness.py on free loopback ports and stopped by PID.
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import harness  # noqa: E402

CSV_HEADER = "time_us,tenant,key,key_size,value_size,op,penalty_us"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_trace(locus: str, out: Path, tenants: list[str], requests: int, seed: int,
               split_slow: float | None = None) -> dict:
    """Writes the trace; with `split_slow`, a key is in class 1 (slow) when
    `key % 1000 < 1000 * split_slow` and class 0 otherwise (the tenant column becomes the class).
    Returns {tenant: distinct keys} and the total."""
    args = [locus, "trace", "generate", "-n", str(requests), "--seed", str(seed), "-o", str(out)]
    for t in tenants:
        args += ["-t", t]
    subprocess.run(args, check=True, capture_output=True)
    keys: dict[int, set] = {}
    lines = out.read_text().splitlines()
    if lines[0] != CSV_HEADER:
        raise SystemExit(f"{out}: unexpected header {lines[0]!r}")
    rows = []
    for line in lines[1:]:
        p = line.split(",")
        if split_slow is not None:
            p[1] = "1" if int(p[2]) % 1000 < 1000 * split_slow else "0"
            rows.append(",".join(p))
        keys.setdefault(int(p[1]), set()).add(p[2])
    if split_slow is not None:
        out.write_text(CSV_HEADER + "\n" + "\n".join(rows) + "\n")
    per = {t: len(k) for t, k in sorted(keys.items())}
    return {"per_tenant": per, "total": sum(per.values())}


def locus_conf(port: int, maxmemory: int, controller: str, names: list[str], tenancy: str,
               routes: list, interval: str, settings: dict) -> str:
    """A Locus configuration: `tenancy` "db" (routes = db numbers) or "prefix" (routes = prefixes)."""
    s = [f"[server]\nport = {port}\n", f'[memory]\nmaxmemory = "{maxmemory}"\n',
         f'[tenancy]\nmode = "{tenancy}"\n',
         f'[controller]\nname = "{controller}"\ninterval = "{interval}"\n']
    if settings:
        s.append("[controller.settings]\n" + "".join(f"{k} = {json.dumps(v)}\n"
                                                    for k, v in settings.items()))
    for n, r in zip(names, routes):
        key = "db" if tenancy == "db" else "prefix"
        s.append(f'[[tenant]]\nname = "{n}"\n{key} = {json.dumps(r)}\n')
    return "\n".join(s)


class Target:
    """How to start one server of the comparison."""

    def __init__(self, label: str, kind: str, controller: str | None = None):
        self.label, self.kind, self.controller = label, kind, controller

    def start(self, maxmemory: int, exp: "Setting"):
        if self.kind == "redis":
            return harness.start_redis(["--maxmemory", str(maxmemory), "--maxmemory-policy",
                                        "allkeys-lru", "--databases", "16"])
        port = harness.free_port()
        conf = locus_conf(port, maxmemory, self.controller or "shared", exp.names, exp.tenancy,
                          exp.routes, exp.interval, exp.settings.get(self.controller or "", {}))
        return harness.start_locus(conf, port)


def stop(srv) -> None:
    srv.stop()
    shutil.rmtree(srv.workdir, ignore_errors=True)


class Setting:
    """One workload: its trace, its tenants and how they reach a server."""

    def __init__(self, name: str, trace: Path, names: list[str], tenancy: str, routes: list,
                 backends: list[str], value_size: int, interval: str, settings: dict,
                 connections: int, warmup: int, requests: int):
        self.name, self.trace, self.names = name, trace, names
        self.tenancy, self.routes, self.backends = tenancy, routes, backends
        self.value_size, self.interval, self.settings = value_size, interval, settings
        self.connections, self.warmup, self.requests = connections, warmup, requests

    def replay_args(self) -> list[str]:
        """`locus replay` arguments after the trace and target (redis-server: the same; in
        prefix mode both prefixes live in its database 0)."""
        if self.tenancy == "db":
            tmap = "db:" + ",".join(str(r) for r in self.routes)
        else:
            tmap = "prefix:" + ",".join(self.routes)
        args = ["--tenants", tmap, "--connections", str(self.connections), "--warmup",
                str(self.warmup), "--pg-rows", "20000"]
        for i, b in enumerate(self.backends):
            args += ["--backend", f"{i}={b}"]
        return args

    def fill_key(self, tenant: int, i: int) -> bytes:
        """A calibration key shaped like the replay's (`prefix` + `k` + a 20-digit number)."""
        prefix = self.routes[tenant] if self.tenancy == "prefix" else ""
        return f"{prefix}k{10**19 + i}".encode()


# ------------------------------------------------------------------------------------------------
# Calibration


def _conn(port: int, db: int | None) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if db is not None:
        s.sendall(_cmd(b"SELECT", str(db).encode()))
        _read_replies(s, 1)
    return s


def _read_replies(s: socket.socket, n: int, buf: bytearray | None = None) -> list[bytes]:
    """Reads `n` simple replies (+OK, -ERR, :N, $-1 or a bulk): their first lines."""
    buf = buf if buf is not None else bytearray()
    out = []
    while len(out) < n:
        i = buf.find(b"\r\n")
        if i < 0:
            chunk = s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
            continue
        line = bytes(buf[:i])
        if line.startswith(b"$") and line != b"$-1":
            need = i + 2 + int(line[1:]) + 2
            while len(buf) < need:
                buf += s.recv(1 << 16)
            del buf[:need]
        else:
            del buf[:i + 2]
        out.append(line)
    return out


def _cmd(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def fill_count(target: Target, maxmemory: int, exp: Setting, keys: int) -> int:
    """Fresh server; writes `3 * keys` distinct keys round-robin over the tenants (SET, pipelined
    32 at a time), then counts with EXISTS how many are still there."""
    srv = target.start(maxmemory, exp)
    try:
        n_t = len(exp.names)
        conns = [_conn(srv.port, exp.routes[t] if exp.tenancy == "db" else None)
                 for t in range(n_t)]
        value = b"v" * exp.value_size
        total = 3 * keys + 100
        batch = 32
        for start in range(0, total, batch * n_t):
            for t in range(n_t):
                cmds = [_cmd(b"SET", exp.fill_key(t, i), value)
                        for i in range(start + t, min(total, start + batch * n_t), n_t)]
                if cmds:
                    conns[t].sendall(b"".join(cmds))
                    for r in _read_replies(conns[t], len(cmds)):
                        if r.startswith(b"-") and not r.startswith(b"-OOM"):
                            raise SystemExit(f"{target.label} fill SET: {r!r}")
        present = 0
        for t in range(n_t):
            ids = list(range(t, total, n_t))
            for j in range(0, len(ids), 256):
                cmds = [_cmd(b"EXISTS", exp.fill_key(t, i)) for i in ids[j:j + 256]]
                conns[t].sendall(b"".join(cmds))
                present += sum(r == b":1" for r in _read_replies(conns[t], len(cmds)))
        for c in conns:
            c.close()
        return present
    finally:
        stop(srv)


def calibrate(target: Target, exp: Setting, keys: int, tol: float = 0.005) -> tuple[int, int]:
    """The maxmemory (bytes) at which `target` holds `keys` of the run's keys (within `tol` of
    them, or the closest of 8 probes), and the count it held."""
    per_key = exp.value_size + 120
    m = keys * per_key + (1 << 20)
    seen: list[tuple[int, int]] = []
    for _ in range(8):
        if any(m == x for x, _ in seen):
            break  # a page-granular server oscillating between two counts: keep the closer
        n = fill_count(target, m, exp, keys)
        seen.append((m, n))
        log(f"    calibrate {target.label} {exp.name}: maxmemory {m} -> {n} keys (target {keys})")
        if abs(n - keys) <= max(2, tol * keys):
            break
        if len(seen) >= 2 and seen[-1][1] != seen[-2][1]:
            (m1, n1), (m2, n2) = seen[-2], seen[-1]
            per_key = max(16.0, (m2 - m1) / (n2 - n1))
        m = max(64 << 10, int(m + (keys - n) * per_key))
    return min(seen, key=lambda s: abs(s[1] - keys))


# ------------------------------------------------------------------------------------------------
# Runs


def replay(locus: str, target: Target, maxmemory: int, exp: Setting) -> dict:
    """One live run: a fresh server, `locus replay` on the setting's trace, the server stopped."""
    srv = target.start(maxmemory, exp)
    try:
        cmd = [locus, "replay", str(exp.trace), "--target", f"redis://127.0.0.1:{srv.port}",
               *exp.replay_args(), "--json", "-q"]
        load0 = os.getloadavg()[0]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        load1 = os.getloadavg()[0]
        if p.returncode != 0:
            raise SystemExit(f"{target.label} {exp.name}: {p.stderr}")
        r = json.loads(p.stdout)
        r["loadavg"] = (load0 + load1) / 2
        return r
    finally:
        stop(srv)


def tenant(r: dict, i: int) -> dict:
    """Tenant `i` of a replay report (trace tenants are named t0, t1, ...)."""
    return next(t for t in r["tenants"] if t["name"] == f"t{i}")


def simulate(locus: str, exp: Setting, workdir: Path, maxmemory: int, penalties: list[float],
             hit_us: float, controllers: list[str], seeds: int = 1) -> dict:
    """`locus simulate` of the same trace: tenants by its tenant column, merged by time, the
    Locus maxmemory and page size of the live runs, penalties and hit time as measured live;
    steady window = the requests after the replay's warm-up. With `seeds` > 1 the model runs
    under seeds 1..N (the engine's and the controllers' random draws; the trace is the live
    one). Returns {controller: steady} for one seed, {controller: [steady per seed]} for more."""
    if seeds > 1:
        runs = [simulate_seed(locus, exp, workdir, maxmemory, penalties, hit_us, controllers, s)
                for s in range(1, seeds + 1)]
        return {c: [r[c] for r in runs] for c in runs[0]}
    return simulate_seed(locus, exp, workdir, maxmemory, penalties, hit_us, controllers, 1)


def simulate_seed(locus: str, exp: Setting, workdir: Path, maxmemory: int, penalties: list[float],
                  hit_us: float, controllers: list[str], seed: int) -> dict:
    """One `locus simulate` run of [`simulate`] under `seed`: {controller: steady}."""
    page = max(16 << 10, 1 << (max(1, maxmemory // 4096).bit_length() - 1))
    page = min(page, 1 << 20)
    lines = [f'name = "live_{exp.name}"', f"seed = {seed}", f"memory = {maxmemory}",
             f'page_size = {page}', f'interval = "{exp.interval.removesuffix("req")}"',
             'interleave = "time"', f"requests = {exp.requests}",
             f"steady = {1 - exp.warmup / exp.requests:.6f}", ""]
    for c in controllers:
        lines.append(f'[[controller]]\nname = "{c}"')
        st = exp.settings.get(c, {})
        if st:
            lines.append("settings = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in st.items())
                         + " }")
        lines.append("")
    for i, n in enumerate(exp.names):
        lines += ["[[tenant]]", f'name = "{n}"',
                  f'trace = {{ path = "{exp.trace}", format = "locus-csv", tenant = {i} }}',
                  f"penalty = {round(penalties[i])}", f"hit_time = {round(hit_us)}", ""]
    f = workdir / f"sim-{exp.name}.toml"
    f.write_text("\n".join(lines))
    p = subprocess.run([locus, "simulate", str(f), "--json", "-q"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"simulate {f}: {p.stderr}")
    out = {}
    for run in json.loads(p.stdout)["runs"]:
        out[run["label"]] = next(x for x in run["steady"] if x["name"] == "run")
    return out


def mmm(v: list[float], fmt: str = "{:.3f}") -> str:
    v = sorted(v)
    return " / ".join(fmt.format(x) for x in (v[0], statistics.median(v), v[-1]))


TARGETS = {
    "redis": Target("redis-server 7", "redis"),
    "shared": Target("Locus shared", "locus", "shared"),
    "predis": Target("Locus predis", "locus", "predis"),
    "kredis": Target("Locus kredis", "locus", "kredis"),
    "mpart": Target("Locus mpart", "locus", "mpart"),
}


def compare(locus: str, exp: Setting, targets: list[str], keys: int, repeats: int,
            calib_cache: dict) -> dict:
    """Calibrates redis-server and Locus to hold `keys` of the run's keys, then runs every target
    `repeats` times, interleaved (each repeat runs all targets; odd repeats in reverse order).
    Returns {"calib": {kind: (maxmemory, held)}, "runs": {target: [report, ...]}}."""
    calib = {}
    for kind in sorted({TARGETS[t].kind for t in targets}):
        ck = (exp.name, kind, keys)
        if ck not in calib_cache:
            probe = TARGETS["redis"] if kind == "redis" else TARGETS["shared"]
            calib_cache[ck] = calibrate(probe, exp, keys)
        calib[kind] = calib_cache[ck]
    runs: dict[str, list[dict]] = {t: [] for t in targets}
    for rep in range(repeats):
        for t in (targets if rep % 2 == 0 else list(reversed(targets))):
            tg = TARGETS[t]
            r = replay(locus, tg, calib[tg.kind][0], exp)
            runs[t].append(r)
            o = r["overall"]
            log(f"  {exp.name} repeat {rep + 1} {tg.label}: mean {o['latency']['mean_us'] / 1000:.3f} ms, "
                f"hit {o['hit_ratio']:.3f}, {o['throughput']:.0f} req/s, load {r['loadavg']:.1f}")
    return {"calib": calib, "runs": runs}


def backend_means(runs: dict, n: int) -> list[float]:
    """Each tenant's backend mean (µs), the median over every run that fetched for it."""
    return [statistics.median([tenant(r, i)["backend"]["mean_us"] for rs in runs.values()
                               for r in rs if tenant(r, i)["backend"]["mean_us"] > 0])
            for i in range(n)]


def hit_time(all_runs: list[dict]) -> float:
    """The time of a hit (µs): the median p50 GET latency of the tenants whose hit ratio is at
    least 0.6 (their median GET is a hit); without any, the smallest p50 of all (a short run)."""
    v = [t["latency"]["p50_us"] for r in all_runs for t in r["tenants"] if t["hit_ratio"] >= 0.6]
    if not v:
        return min(t["latency"]["p50_us"] for r in all_runs for t in r["tenants"])
    return statistics.median(v)


def priced(r: dict, n: int, pens: list[float], hit_us: float) -> float:
    """A run's mean GET latency (ms) recomputed from its own hit ratios with the setting's
    median backend means and hit time: the live cache decisions without the machine's noise."""
    gets = [tenant(r, i)["counters"]["gets"] for i in range(n)]
    cost = sum(g * (hit_us + (1 - tenant(r, i)["hit_ratio"]) * pens[i]) for i, g in enumerate(gets))
    return cost / max(1, sum(gets)) / 1000


def table(case: dict, names: list[str], short: list[str], hit_us: float) -> str:
    """A Markdown table: one row per target (min / median / max of its repeats) and one per
    modelled controller. "vs redis": the median mean latency's change against redis-server's
    ("tie" when the two min-max ranges overlap); "priced": each run's hit ratios priced at the
    measured backend means and hit time (see `priced`), min / median / max, and its median's
    change against redis-server's (the model's mean is priced the same way)."""
    runs, pens = case["runs"], case["penalties"]
    n = len(names)
    head = ["", "mean ms", "p99 ms", "req/s"] + [f"mean {s}" for s in short] + \
        [f"hit {s}" for s in short] + ["vs redis", "priced ms"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base = [r["overall"]["latency"]["mean_us"] / 1000 for r in runs.get("redis", [])]
    for t, rs in runs.items():
        mean = [r["overall"]["latency"]["mean_us"] / 1000 for r in rs]
        row = [TARGETS[t].label, mmm(mean), mmm([r["overall"]["latency"]["p99_us"] / 1000 for r in rs], "{:.2f}"),
               mmm([r["overall"]["throughput"] for r in rs], "{:.0f}")]
        row += [mmm([tenant(r, i)["latency"]["mean_us"] / 1000 for r in rs]) for i in range(n)]
        row += [mmm([tenant(r, i)["hit_ratio"] for r in rs]) for i in range(n)]
        if base and t != "redis":
            d = (statistics.median(mean) - statistics.median(base)) / statistics.median(base)
            tie = max(min(mean), min(base)) <= min(max(mean), max(base))
            row.append(f"{d:+.1%}" + (" (tie)" if tie else ""))
        else:
            row.append("")
        pr = [priced(r, n, pens, hit_us) for r in rs]
        cell = mmm(pr)
        if base and t != "redis":
            pb = statistics.median(priced(r, n, pens, hit_us) for r in runs["redis"])
            cell += f" ({(statistics.median(pr) - pb) / pb:+.1%})"
        row.append(cell)
        out.append("| " + " | ".join(row) + " |")
    for c, sts in case["sim"].items():
        # One steady window per model seed (an older file has one, not in a list).
        sts = sts if isinstance(sts, list) else [sts]

        def cell(f) -> str:
            return "*" + mmm([f(st) for st in sts]) + "*"

        def ten(st, nm):
            return next(x for x in st["tenants"] if x["name"] == nm)

        row = [f"*model: {c}*", cell(lambda st: st["overall"]["mean_latency_us"] / 1000), "", ""]
        row += [cell(lambda st, nm=nm: ten(st, nm)["mean_latency_us"] / 1000) for nm in names]
        row += [cell(lambda st, nm=nm: ten(st, nm)["hit_ratio"]) for nm in names]
        row += ["", ""]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def common_args(ap, connections: int, conn_help: str) -> None:
    """The options both live experiments take."""
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--requests", type=int, default=60_000)
    ap.add_argument("--warmup", type=int, default=20_000, help="requests sent but not measured")
    ap.add_argument("--fast-query", default="pg:pk")
    ap.add_argument("--slow-query", default="pg:agg:5000")
    ap.add_argument("--connections", type=int, default=connections, help=conn_help)
    ap.add_argument("--interval", default="5000req", help="Locus's and the model's decision interval")
    ap.add_argument("--rate", type=float, default=0.05, help="sampling rate of predis, kredis, mpart")
    ap.add_argument("--targets", default="redis,shared,predis,kredis,mpart")
    ap.add_argument("--json", default=None, help="raw results (default: the temp directory)")
    ap.add_argument("--report", default=None, metavar="JSON",
                    help="print the tables of an earlier run's raw results instead of running")
    ap.add_argument("--model-seeds", type=int, default=1,
                    help="run the model (locus simulate) under seeds 1..N and give min / median / "
                         "max; with --report, re-runs only the model of the saved live results "
                         "(same trace, calibration and measured penalties), no live run")


def begin(name: str, a) -> tuple:
    """The binary, the targets, a scratch directory and the start time; prints the header."""
    stamp = datetime.datetime.now(datetime.timezone.utc)
    print(f"# bench/live/{name}.py {' '.join(sys.argv[1:])}  ({stamp:%Y-%m-%d %H:%M} UTC)", flush=True)
    return harness.locus_bin(), a.targets.split(","), new_workdir(), stamp


def controller_settings(rate: float) -> dict:
    return {c: {"rate": rate} for c in ("predis", "kredis", "mpart")}


def run_case(locus: str, exp: Setting, ws: dict, keys: int, title: str, targets: list[str],
             repeats: int, calib_cache: dict) -> dict:
    """Calibrates and runs one case; its record (runs trimmed to what the tables use)."""
    res = compare(locus, exp, targets, keys, repeats, calib_cache)
    runs = {t: [{x: r[x] for x in ("overall", "tenants", "loadavg")} for r in rs]
            for t, rs in res["runs"].items()}
    return {"title": title, "ws": ws, "keys": keys, "calib": res["calib"], "runs": runs,
            "penalties": backend_means(runs, len(exp.names))}


def finish(locus: str, a, name: str, stamp, cases: dict, exps: dict, names: list[str],
           short: list[str]) -> None:
    """Models every case, then prints the tables and writes the raw results."""
    all_runs = [r for c in cases.values() for rs in c["runs"].values() for r in rs]
    hit = hit_time(all_runs)
    targets = a.targets.split(",")
    wd = exps[next(iter(exps))].trace.parent
    for k, c in cases.items():
        c["sim"] = simulate(locus, exps[k], wd, c["calib"]["locus"][0], c["penalties"], hit,
                            [t for t in targets if t != "redis"], a.model_seeds)
    out = a.json or str(Path(tempfile.gettempdir()) / f"live-{name}-{stamp:%Y%m%dT%H%M%SZ}.json")
    with open(out, "w") as f:
        json.dump({"argv": getattr(a, "live_argv", sys.argv),
                   "date": getattr(a, "live_date", stamp.isoformat()), "hit_us": hit,
                   "replay": exps[next(iter(exps))].replay_args(), "cases": cases}, f, indent=1)
    print_report(cases, names, short, hit, exps[next(iter(exps))].replay_args())
    print(f"raw results: {out}")


def print_report(cases: dict, names: list[str], short: list[str], hit: float,
                 replay_args: list[str]) -> None:
    for c in cases.values():
        cal, pens = c["calib"], c["penalties"]
        per = c["ws"]["per_tenant"]
        print(f"\n**{c['title']}** ({c['ws']['total']} distinct keys: "
              + ", ".join(f"{short[int(i)]} {v}" for i, v in per.items())
              + f"; memory for {c['keys']}: redis-server maxmemory {cal['redis'][0]} holds "
              f"{cal['redis'][1]}, Locus {cal['locus'][0]} holds {cal['locus'][1]}; measured backend "
              "means " + ", ".join(f"{s} {p / 1000:.3f} ms" for s, p in zip(short, pens)) + ")\n")
        print(table(c, names, short, hit))
    loads = [r["loadavg"] for c in cases.values() for rs in c["runs"].values() for r in rs]
    print(f"\nhit time (median GET p50 of the tenants hitting >= 60 %; livelib.hit_time): {hit / 1000:.3f} ms; "
          f"load average during the runs: {mmm(loads, '{:.1f}')}")
    print(f"each run: locus replay TRACE --target redis://127.0.0.1:PORT {' '.join(replay_args)}")


def load(path: str) -> dict:
    """Saved raw results (`--json`, gzipped or not)."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def reprint(path: str, names: list[str], short: list[str]) -> None:
    """`--report`: the tables of saved raw results."""
    d = load(path)
    print_report(d["cases"], names, short, d["hit_us"], d["replay"])


def remodel_args(ap, a):
    """`--report FILE --model-seeds N` (N > 1): the saved run's own arguments (so its traces and
    settings are rebuilt as they were), with this call's --model-seeds and --json, and the saved
    results; `(a, None)` otherwise."""
    if not (a.report and a.model_seeds > 1):
        return a, None
    saved = load(a.report)
    b = ap.parse_args(saved["argv"][1:])
    b.model_seeds, b.json, b.report = a.model_seeds, a.json, None
    b.live_argv, b.live_date = saved["argv"], saved["date"]  # the file stays the live run's
    return b, saved


def new_workdir() -> Path:
    base = Path(os.environ.get("LIVEBENCH_TMP", tempfile.gettempdir()))
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="locus-live-", dir=base))
