#!/usr/bin/env python3
"""Puts the table of every paper claim at the top of EXPERIMENTS.md (called by
scripts/experiments-md.sh after it has assembled the write-ups).

Each claim is one line in its write-up (experiments/<name>.md), right after the paragraph that
gives the verdict, so that whoever changes the verdict sees the line:

    <!-- claim: CLAIM | reproduced|partly|not | OUR FIGURE | THE PAPER'S FIGURE -->

The claim links to the heading above its line; its paper is the write-up's top heading. A line
that does not parse, or an unknown verdict, stops the build with the file and line.
Usage: scripts/experiments-claims.py EXPERIMENTS.md   (rewrites the file in place)
"""

import re
import sys

CLAIM = re.compile(r"^<!--\s*claim:\s*(.*?)\s*-->\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
VERDICTS = {"reproduced": "reproduced", "partly": "partly", "not": "**not**"}
MARK = "<!-- claims table -->"


def slug(heading):
    """GitHub's anchor for a heading."""
    h = re.sub(r"`", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def main(path):
    text = open(path, encoding="utf-8").read()
    if MARK not in text:
        sys.exit(f"{path}: no {MARK!r} line to put the table at")
    lines = text.split("\n")
    seen, rows, problems = {}, [], []
    paper = section = anchor = None
    in_code = False
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        h = HEADING.match(line)
        if h:
            s = slug(h.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            s = s if k == 0 else f"{s}-{k}"
            if len(h.group(1)) == 2:
                paper = h.group(2)
            section, anchor = h.group(2), s
            continue
        c = CLAIM.match(line)
        if not c:
            continue
        cells = [x.strip() for x in c.group(1).split("|")]
        if len(cells) != 4 or cells[1] not in VERDICTS or not all(cells):
            problems.append(f"{path}:{n}: a claim is `CLAIM | reproduced|partly|not | OURS | PAPER'S`: {line}")
            continue
        if anchor is None:
            problems.append(f"{path}:{n}: a claim before any heading")
            continue
        short = paper.split()[0].rstrip(":")
        rows.append((short, cells, anchor, section))
    if problems:
        sys.exit("\n".join(problems))

    count = {v: sum(1 for r in rows if r[1][1] == v) for v in VERDICTS}
    out = [
        "## Every paper claim at a glance",
        "",
        f"{len(rows)} claims from the papers: {count['reproduced']} reproduced, {count['partly']} partly, "
        f"{count['not']} not. Each row links to the section with its tables, its command and the reasons; "
        "simulator figures are three seeds unless the section says otherwise, *live* ones are measured "
        "over the network. This table is built by `scripts/experiments-md.sh` from the `claim:` line "
        "under each verdict in `experiments/*.md`.",
        "",
        "| paper | claim | verdict | our figure | the paper's figure |",
        "|---|---|---|---|---|",
    ]
    for short, (claim, verdict, ours, theirs), anchor, section in rows:
        out.append(f"| {short} | [{claim}](#{anchor}) | {VERDICTS[verdict]} | {ours} | {theirs} |")
    table = "\n".join(out)
    open(path, "w", encoding="utf-8").write(text.replace(MARK, table, 1))
    print(f"{path}: {len(rows)} claims in the table")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "EXPERIMENTS.md")
