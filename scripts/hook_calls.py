#!/usr/bin/env python3
"""Two ckptctl builds on the hook path, against one running ckptd: ROUNDS
interleaved rounds (after 20 warm-up), each running, per binary (order
alternating every round), `ckptctl -q -C PROJ turn-start`, `turn-end` and
`--version`, each a fresh process timed from posix_spawn to waitpid.
Prints medians, the median paired difference and how often NEW was slower.
Compare fresh copies of both builds made together (docs/architecture.md).

    scripts/hook_calls.py CKPTD OLD_CKPTCTL NEW_CKPTCTL [ROUNDS]
"""
import os, statistics, subprocess, sys, tempfile, time

ckptd, old, new = sys.argv[1:4]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 200
tmp = tempfile.mkdtemp(prefix="mcp-hookbench-")
sock, data, proj = f"{tmp}/ckptd.sock", f"{tmp}/data", f"{tmp}/proj"
os.makedirs(proj)
for i in range(50):
    with open(f"{proj}/f{i}.txt", "w") as f:
        f.write(f"file {i}\n" * 20)
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

    def timed(argv):
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, env)
        _, status = os.waitpid(pid, 0)
        t1 = time.perf_counter_ns()
        assert os.waitstatus_to_exitcode(status) == 0, argv
        return (t1 - t0) / 1e6

    ops = {
        "turn-start": lambda b: [b, "-q", "-C", proj, "turn-start"],
        "turn-end": lambda b: [b, "-q", "-C", proj, "turn-end"],
        "--version": lambda b: [b, "--version"],
    }
    res = {(b, op): [] for b in ("old", "new") for op in ops}
    bins = {"old": old, "new": new}
    warm = 20
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # --version's output
    for r in range(warm + rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for b in order:
            for op in ("turn-start", "turn-end", "--version"):
                ms = timed(ops[op](bins[b]))
                if r >= warm:
                    res[(b, op)].append(ms)
    out = sys.stderr
    print(f"{rounds} rounds (+{warm} warm-up), medians in ms:", file=out)
    for op in ops:
        o, n = res[("old", op)], res[("new", op)]
        diffs = [b - a for a, b in zip(o, n)]
        slower = sum(d > 0 for d in diffs) / len(diffs)
        print(
            f"  {op:<11} old {statistics.median(o):.3f}  new {statistics.median(n):.3f}"
            f"  new/old {statistics.median(n) / statistics.median(o):.3f}"
            f"  median paired diff {statistics.median(diffs) * 1000:+.0f} us"
            f"  (new slower in {slower:.0%} of rounds)"
            f"  p10/p90 old {statistics.quantiles(o, n=10)[0]:.3f}/{statistics.quantiles(o, n=10)[-1]:.3f}"
            f" new {statistics.quantiles(n, n=10)[0]:.3f}/{statistics.quantiles(n, n=10)[-1]:.3f}",
            file=out,
        )
finally:
    daemon.terminate()
    daemon.wait()
