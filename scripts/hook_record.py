#!/usr/bin/env python3
"""A hook call against a plain turn-start, on one running ckptd: 150
interleaved pairs of `ckptctl turn-start --from-hook=claude-code` (with a
Claude Code payload on stdin) and `ckptctl -C PROJ turn-start` with the same
session and label; prints both medians and their difference, which is what
the hook path adds (reading the payload, recording the call's outcome).
Put DIR on the disk under test (the data dir and the project go there).

    scripts/hook_record.py CKPTD CKPTCTL [DIR]
"""
import json, statistics, sys

from benchkit import Daemon

ckptd, ctl = sys.argv[1], sys.argv[2]
with Daemon(ckptd, ctl, files=1, dir=sys.argv[3] if len(sys.argv) > 3 else None,
            prefix="hookrec-") as d:
    payload = json.dumps({"session_id": "s", "cwd": d.proj, "prompt": "p"}).encode()
    hook, plain = [], []
    for i in range(150):
        hook.append(d.timed([ctl, "turn-start", "--from-hook=claude-code"], payload))
        plain.append(d.timed([ctl, "-q", "-C", d.proj, "turn-start", "--session", "s",
                              "--label", "p"], b""))
    h, p = statistics.median(hook), statistics.median(plain)
    print("from-hook %.3f ms  plain %.3f ms  diff %.0f us" % (h, p, (h - p) * 1e3))
