#!/usr/bin/env bash
# Rebuilds EXPERIMENTS.md from the write-ups in experiments/*.md (one per paper), in paper order.
# Usage: scripts/experiments-md.sh   (run after changing a write-up; the result is committed)
set -euo pipefail
cd "$(dirname "$0")/.."
order=(dlru kredis predis mpart lama memsweeper live)
{
  cat <<'HEAD'
# Experiments

One experiment per paper claim (issue #4), each run by `locus simulate experiments/<name>.toml` on
the production engine with a virtual clock. Every section below is copied from its write-up in
`experiments/` by `scripts/experiments-md.sh`: the result table, the exact command, and whether it
reproduces the paper. A scaled-down run of every experiment is a golden test
(`cargo test --release -p locus-sim --test golden`; `LOCUS_BLESS=1` regenerates the files, reviewed in the diff).

HEAD
  for name in "${order[@]}"; do
    f="experiments/$name.md"
    if [ -f "$f" ]; then
      cat "$f"
      printf '\n'
    else
      printf '## %s\n\nNot written yet: no `%s`.\n\n' "$name" "$f"
    fi
  done
} > EXPERIMENTS.md
echo "wrote EXPERIMENTS.md"
