#!/usr/bin/env python3
"""What recording the conversation's position costs a hook call: two ckptctl
builds, against one running ckptd, each running `turn-start
--from-hook=claude-code` with a Claude Code payload whose `transcript_path`
names a transcript of SIZE_MB (JSON Lines entries of about ENTRY_KB KiB,
default 2, written in Claude Code's format), then a plain `turn-end`. ROUNDS interleaved rounds
(after 20 warm-up), order alternating every round, each call a fresh process
timed from posix_spawn to waitpid. An OLD build without the conversation
adapters only keeps the path; a NEW one also reads the transcript's tail.
CKPTD must be a build that stores the position (an older daemon drops it);
the last turn's stored position is printed to show it was recorded.

    scripts/hook_transcript.py CKPTD OLD_CKPTCTL NEW_CKPTCTL [ROUNDS] [SIZE_MB] [ENTRY_KB]
"""
import json, os, subprocess, sys

from benchkit import Daemon, paired

ckptd, old, new = sys.argv[1:4]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 200
size_mb = float(sys.argv[5]) if len(sys.argv) > 5 else 20
entry_kb = float(sys.argv[6]) if len(sys.argv) > 6 else 2
with Daemon(ckptd, old, prefix="hook-transcript-") as d:
    transcript = f"{d.tmp}/session.jsonl"
    with open(transcript, "w") as f:
        count, parent = 0, None
        while f.tell() < size_mb * (1 << 20):
            count += 1
            uuid = f"00000000-0000-4000-8000-{count:012d}"
            kind = "user" if count % 2 else "assistant"
            f.write(json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external",
                                "cwd": d.proj, "sessionId": "s", "version": "2.0.55", "type": kind,
                                "uuid": uuid, "message": {"role": kind, "content": "x" * int(entry_kb * 1024 - 250)}}) + "\n")
            parent = uuid
    payload = json.dumps({"session_id": "s", "transcript_path": transcript, "cwd": d.proj,
                          "hook_event_name": "UserPromptSubmit", "prompt": "p"}).encode()
    bins = {"old": old, "new": new}
    res = {b: [] for b in bins}
    warm = 20
    for r in range(warm + rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for b in order:
            ms = d.timed([bins[b], "turn-start", "--from-hook=claude-code"], payload)
            d.timed([bins[b], "-q", "-C", d.proj, "turn-end"], b"")
            if r >= warm:
                res[b].append(ms)
    print(f"transcript {os.path.getsize(transcript) / (1 << 20):.1f} MiB ({count} entries), {rounds} rounds"
          f" (+{warm} warm-up), turn-start --from-hook=claude-code medians in ms:")
    print("  " + paired(res["old"], res["new"]))
    show = subprocess.run([new, "--json", "-C", d.proj, "log", "--limit", "2"], env=d.env,
                          capture_output=True, check=True)
    positions = [t.get("conversation") for t in json.loads(show.stdout)["turns"]]
    print("  the last two turns' conversation positions:", positions)
