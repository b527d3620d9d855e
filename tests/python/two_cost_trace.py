"""The two-cost trace of the per-key penalty class runs (tests/python/test_penalty_classes.py,
bench/live/classes.py): one tenant's Zipf(0.99) GETs over `keys` keys of `value`-byte values in
Locus CSV, each request's penalty column its key's miss cost: `dear_us` for odd ids, `cheap_us`
for even ones. Popularity is independent of the cost: ranks are a seeded random permutation of
the ids."""

from __future__ import annotations

import random
from pathlib import Path


def write_trace(path: Path, n: int, keys: int, value: int, cheap_us: int, dear_us: int,
                seed: int = 11) -> None:
    rng = random.Random(seed)
    ids = list(range(keys))
    rng.shuffle(ids)
    w = [1.0 / (r + 1) ** 0.99 for r in range(keys)]
    ranks = rng.choices(range(keys), weights=w, k=n)
    with open(path, "w") as f:
        f.write("time_us,tenant,key,key_size,value_size,op,penalty_us\n")
        for i, r in enumerate(ranks):
            k = ids[r]
            f.write(f"{i},0,{k},8,{value},get,{dear_us if k % 2 else cheap_us}\n")
