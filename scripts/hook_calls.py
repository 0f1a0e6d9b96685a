#!/usr/bin/env python3
"""Two ckptctl builds on the hook path, against one running ckptd: ROUNDS
interleaved rounds (after 20 warm-up), each running, per binary (order
alternating every round), `ckptctl -q -C PROJ turn-start`, `turn-end`,
the same two as Claude Code's hooks run them (`--from-hook=claude-code`,
its payload on stdin) and `--version`, each a fresh process timed from
posix_spawn to waitpid.
Prints medians, the median paired difference and how often NEW was slower.
Compare fresh copies of both builds made together, each in a directory of
its own, and CKPTD in one with no ckptctl: ckptd locks the ckptctl beside
it in memory, which alone made a client 150-300 us faster
(docs/measurements.md, issue 22).

    scripts/hook_calls.py CKPTD OLD_CKPTCTL NEW_CKPTCTL [ROUNDS]
"""
import json, os, statistics, sys

from benchkit import Daemon, paired

ckptd, old, new = sys.argv[1:4]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 200
with Daemon(ckptd, old, prefix="mcp-hookbench-") as d:
    ops = {
        "turn-start": lambda b: [b, "-q", "-C", d.proj, "turn-start"],
        "turn-end": lambda b: [b, "-q", "-C", d.proj, "turn-end"],
        "hook start": lambda b: [b, "turn-start", "--from-hook=claude-code"],
        "hook end": lambda b: [b, "turn-end", "--from-hook=claude-code"],
        "--version": lambda b: [b, "--version"],
    }
    payload = json.dumps({"session_id": "bench", "cwd": d.proj, "prompt": "p",
                          "hook_event_name": "UserPromptSubmit"}).encode()
    stdin = {op: payload if op.startswith("hook") else None for op in ops}
    res = {(b, op): [] for b in ("old", "new") for op in ops}
    bins = {"old": old, "new": new}
    warm = 20
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # --version's output
    for r in range(warm + rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for b in order:
            for op in ops:
                ms = d.timed(ops[op](bins[b]), stdin[op])
                if r >= warm:
                    res[(b, op)].append(ms)
    out = sys.stderr
    print(f"{rounds} rounds (+{warm} warm-up), medians in ms:", file=out)
    for op in ops:
        o, n = res[("old", op)], res[("new", op)]
        q = lambda v: statistics.quantiles(v, n=10)
        print(f"  {op:<11} {paired(o, n)}"
              f"  p10/p90 old {q(o)[0]:.3f}/{q(o)[-1]:.3f} new {q(n)[0]:.3f}/{q(n)[-1]:.3f}",
              file=out)
