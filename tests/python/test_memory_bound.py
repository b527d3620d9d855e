"""The budget is the memory (issue #11): millions of tiny keys keep the server's RSS near
`maxmemory`, because the key index and the other per-key metadata count toward it, and INFO's
used_memory never passes maxmemory (a page's rounding aside). Loaded with redis-benchmark, the
load generator Redis users know."""

import shutil
import subprocess

import pytest

from harness import Raw, free_ports, rss

pytestmark = pytest.mark.locus_only

MIB = 1 << 20


def info_field(c: Raw, section: str, name: str) -> int:
    text = c.call("INFO", section).decode()
    return int(text.split(f"{name}:")[1].split("\r\n")[0])


@pytest.mark.skipif(shutil.which("redis-benchmark") is None, reason="needs redis-benchmark (redis-tools)")
def test_six_million_one_byte_sets_keep_rss_near_maxmemory(start_locus_toml):
    (port,) = free_ports(1)
    maxmemory = 64 * MIB
    srv = start_locus_toml(f'[server]\nport = {port}\n[memory]\nmaxmemory = "64mb"\n', port)
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-t", "set", "-n", "6000000", "-r", "1000000000",
         "-d", "1", "-P", "64", "-c", "4", "-q"],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr
    peak = rss(srv.proc.pid)
    with Raw(port) as c:
        used = info_field(c, "memory", "used_memory")
        keys = c.call("DBSIZE")
        assert c.call("SET", "still", "writable") == "OK"
    print(f"6M one-byte SETs: RSS {peak / MIB:.1f} MiB, used_memory {used / MIB:.1f} MiB, {keys} keys")
    assert peak <= 1.15 * maxmemory + 64 * MIB, f"RSS {peak / MIB:.0f} MiB with {keys} keys"
    assert used <= maxmemory, f"used_memory {used} over maxmemory {maxmemory}"
    assert keys > 100_000, f"only {keys} keys kept"
