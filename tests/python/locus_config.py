"""One vocabulary of server settings, rendered as redis-server flags or as a Locus TOML file.

Settings understood by both peers:
  maxmemory     bytes (int) or None for the default
  policy        a maxmemory-policy name ("allkeys-lru", "noeviction", ...)
  samples       maxmemory-samples
  requirepass   password of the default user
  users         {name: password}: extra ACL users with full access
The Locus TOML format is documented in config/locus.toml (every key, with its default).
"""

from __future__ import annotations


def redis_args(maxmemory=None, policy=None, samples=None, requirepass=None, users=None) -> list[str]:
    args: list[str] = []
    if maxmemory is not None:
        args += ["--maxmemory", str(maxmemory)]
    if policy is not None:
        args += ["--maxmemory-policy", policy]
    if samples is not None:
        args += ["--maxmemory-samples", str(samples)]
    if requirepass is not None:
        args += ["--requirepass", requirepass]
    for name, pw in (users or {}).items():
        args += ["--user", name, "on", f">{pw}", "~*", "&*", "+@all"]
    return args


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def locus_toml(port: int, maxmemory=None, policy=None, samples=None, requirepass=None, users=None,
               extra: str = "") -> str:
    """A Locus config (format: config/locus.toml) equivalent to `redis_args` with the same settings.

    `users` maps to tenancy mode "user" with one tenant per user (no default tenant), which behaves as
    Redis with `requirepass` plus ACL users: unauthenticated commands get NOAUTH."""
    lines = ["[server]", f"bind = {_q('127.0.0.1')}", f"port = {int(port)}"]
    if requirepass is not None and not users:  # user mode: the users' passwords are the credentials
        lines.append(f"requirepass = {_q(requirepass)}")
    if maxmemory is not None:
        lines += ["", "[memory]", f"maxmemory = {int(maxmemory)}"]
    if policy is not None or samples is not None:
        lines += ["", "[eviction]"]
        if policy is not None:
            lines.append(f"policy = {_q(policy)}")
        if samples is not None:
            lines.append(f"samples = {int(samples)}")
    if users:
        lines += ["", "[tenancy]", f"mode = {_q('user')}"]
        for name, pw in users.items():
            lines += ["", "[[tenant]]", f"name = {_q(name)}", f"user = {_q(name)}", f"password = {_q(pw)}"]
    return "\n".join(lines) + "\n" + extra
