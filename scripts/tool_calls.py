#!/usr/bin/env python3
"""A tool window's hook calls against a turn boundary's, on one ckptd:
ROUNDS interleaved rounds (after 20 warm-up), each timing, in alternating
order, `ckptctl -q -C PROJ tool-start --session S` + `tool-end` and
`turn-start --session S` + `turn-end`, each a fresh process. Prints the
medians of each pair and their ratio. A second session keeps a turn open
throughout (the case windows exist for).

    scripts/tool_calls.py CKPTD CKPTCTL [ROUNDS]
"""
import subprocess, sys

from benchkit import Daemon, paired

ckptd, ctl = sys.argv[1:3]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 200
with Daemon(ckptd, ctl, prefix="ckpt-toolbench-") as d:
    subprocess.run([ctl, "-q", "-C", d.proj, "turn-start", "--session", "other"],
                   env=d.env, check=True)
    call = lambda *a: [ctl, "-q", "-C", d.proj, *a, "--session", "s"]
    pairs = {
        "turn": (call("turn-start"), call("turn-end")),
        "tool": (call("tool-start"), call("tool-end")),
    }
    res = {k: [] for k in pairs}
    warm = 20
    for r in range(warm + rounds):
        for k in (pairs if r % 2 == 0 else reversed(list(pairs))):
            ms = sum(d.timed(argv) for argv in pairs[k])
            if r >= warm:
                res[k].append(ms)
    print(f"{rounds} rounds (+{warm} warm-up), medians in ms,"
          " old = turn-start+end, new = tool-start+end:", file=sys.stderr)
    print("  " + paired(res["turn"], res["tool"]), file=sys.stderr)
