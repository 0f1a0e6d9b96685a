#!/usr/bin/env python3
"""A tool window's hook calls against a turn boundary's, on one ckptd:
ROUNDS interleaved rounds (after 20 warm-up), each timing, in alternating
order, `ckptctl -q -C PROJ tool-start --session S` + `tool-end` and
`turn-start --session S` + `turn-end`, each a fresh process timed from
posix_spawn to waitpid. Prints the medians of each pair and their ratio.
A second session keeps a turn open throughout (the case windows exist for).

    scripts/tool_calls.py CKPTD CKPTCTL [ROUNDS]
"""
import os, statistics, subprocess, sys, tempfile, time

ckptd, ctl = sys.argv[1:3]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 200
tmp = tempfile.mkdtemp(prefix="ckpt-toolbench-")
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
    while subprocess.run([ctl, "-q", "status"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        assert time.time() < deadline, "ckptd did not start"
        time.sleep(0.01)
    subprocess.run([ctl, "-q", "-C", proj, "watch"], env=env, check=True)
    subprocess.run([ctl, "-q", "-C", proj, "turn-start", "--session", "other"], env=env, check=True)

    def timed(*argvs):
        total = 0
        for argv in argvs:
            t0 = time.perf_counter_ns()
            pid = os.posix_spawn(argv[0], argv, env)
            _, status = os.waitpid(pid, 0)
            total += time.perf_counter_ns() - t0
            assert os.waitstatus_to_exitcode(status) == 0, argv
        return total / 1e6

    call = lambda *a: [ctl, "-q", "-C", proj, *a, "--session", "s"]
    pairs = {
        "tool-start+end": (call("tool-start"), call("tool-end")),
        "turn-start+end": (call("turn-start"), call("turn-end")),
    }
    res = {k: [] for k in pairs}
    warm = 20
    for r in range(warm + rounds):
        order = list(pairs) if r % 2 == 0 else list(reversed(pairs))
        for k in order:
            ms = timed(*pairs[k])
            if r >= warm:
                res[k].append(ms)
    tool, turn = res["tool-start+end"], res["turn-start+end"]
    diffs = [a - b for a, b in zip(tool, turn)]
    print(f"{rounds} rounds (+{warm} warm-up), medians in ms:", file=sys.stderr)
    print(f"  turn-start+end {statistics.median(turn):.3f}  tool-start+end {statistics.median(tool):.3f}"
          f"  tool/turn {statistics.median(tool) / statistics.median(turn):.3f}"
          f"  median paired diff {statistics.median(diffs) * 1000:+.0f} us", file=sys.stderr)
finally:
    daemon.terminate()
    daemon.wait()
