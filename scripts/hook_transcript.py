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
import json, os, statistics, subprocess, sys, tempfile, time

ckptd, old, new = sys.argv[1:4]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 200
size_mb = float(sys.argv[5]) if len(sys.argv) > 5 else 20
entry_kb = float(sys.argv[6]) if len(sys.argv) > 6 else 2
tmp = tempfile.mkdtemp(prefix="hook-transcript-")
sock, data, proj = f"{tmp}/ckptd.sock", f"{tmp}/data", f"{tmp}/proj"
os.makedirs(proj)
for i in range(50):
    with open(f"{proj}/f{i}.txt", "w") as f:
        f.write(f"file {i}\n" * 20)
transcript = f"{tmp}/session.jsonl"
with open(transcript, "w") as f:
    count, parent = 0, None
    while f.tell() < size_mb * (1 << 20):
        count += 1
        uuid = f"00000000-0000-4000-8000-{count:012d}"
        kind = "user" if count % 2 else "assistant"
        f.write(json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external",
                            "cwd": proj, "sessionId": "s", "version": "2.0.55", "type": kind,
                            "uuid": uuid, "message": {"role": kind, "content": "x" * int(entry_kb * 1024 - 250)}}) + "\n")
        parent = uuid
payload = json.dumps({"session_id": "s", "transcript_path": transcript, "cwd": proj,
                      "hook_event_name": "UserPromptSubmit", "prompt": "p"}).encode()
env = dict(os.environ, CKPT_SOCKET=sock, CKPT_DATA_DIR=data, CKPT_NO_AUTOSTART="1")
log = open(f"{tmp}/ckptd.log", "w")
daemon = subprocess.Popen([ckptd, "--socket", sock, "--data-dir", data], stdout=log, stderr=log)
try:
    deadline = time.time() + 30
    while subprocess.run([old, "-q", "status"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        assert time.time() < deadline, "ckptd did not start"
        time.sleep(0.01)
    subprocess.run([old, "-q", "-C", proj, "watch"], env=env, check=True)

    def timed(argv, stdin=None):
        r, w = os.pipe()
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, r, 0), (os.POSIX_SPAWN_CLOSE, w)])
        os.close(r)
        os.write(w, stdin or b"")
        os.close(w)
        _, status = os.waitpid(pid, 0)
        t1 = time.perf_counter_ns()
        assert os.waitstatus_to_exitcode(status) == 0, argv
        return (t1 - t0) / 1e6

    bins = {"old": old, "new": new}
    res = {b: [] for b in bins}
    warm = 20
    for r in range(warm + rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for b in order:
            ms = timed([bins[b], "turn-start", "--from-hook=claude-code"], payload)
            timed([bins[b], "-q", "-C", proj, "turn-end"])
            if r >= warm:
                res[b].append(ms)
    o, n = res["old"], res["new"]
    diffs = [b - a for a, b in zip(o, n)]
    slower = sum(d > 0 for d in diffs) / len(diffs)
    print(f"transcript {os.path.getsize(transcript) / (1 << 20):.1f} MiB ({count} entries), {rounds} rounds"
          f" (+{warm} warm-up), turn-start --from-hook=claude-code medians in ms:")
    print(f"  old {statistics.median(o):.3f}  new {statistics.median(n):.3f}"
          f"  median paired diff {statistics.median(diffs) * 1000:+.0f} us"
          f"  (new slower in {slower:.0%} of rounds)")
    show = subprocess.run([new, "--json", "-C", proj, "log", "--limit", "2"], env=env,
                          capture_output=True, check=True)
    positions = [t.get("conversation") for t in json.loads(show.stdout)["turns"]]
    print("  the last two turns' conversation positions:", positions)
finally:
    daemon.terminate()
    daemon.wait()
