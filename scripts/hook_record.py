#!/usr/bin/env python3
"""A hook call against a plain turn-start, on one running ckptd: 150
interleaved pairs of `ckptctl turn-start --from-hook=claude-code` (with a
Claude Code payload on stdin) and `ckptctl -C PROJ turn-start` with the same
session and label; prints both medians and their difference, which is what
the hook path adds (reading the payload, recording the call's outcome).
Put DIR on the disk under test (the data dir and the project go there).

    scripts/hook_record.py CKPTD CKPTCTL [DIR]
"""
import os, subprocess, sys, tempfile, time, statistics, json
ckptd, ctl = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="hookrec-", dir=sys.argv[3] if len(sys.argv) > 3 else None)
sock, data, proj = f"{tmp}/s.sock", f"{tmp}/data", f"{tmp}/proj"
os.makedirs(proj)
open(f"{proj}/f", "w").write("x\n")
env = dict(os.environ, CKPT_SOCKET=sock, CKPT_DATA_DIR=data, CKPT_NO_AUTOSTART="1")
d = subprocess.Popen([ckptd, "--socket", sock, "--data-dir", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while subprocess.run([ctl, "-q", "status"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode: time.sleep(0.01)
subprocess.run([ctl, "-q", "-C", proj, "watch"], env=env, check=True)
payload = json.dumps({"session_id": "s", "cwd": proj, "prompt": "p"}).encode()
def t(args, inp):
    t0 = time.perf_counter(); subprocess.run([ctl] + args, env=env, input=inp, stdout=subprocess.DEVNULL); return time.perf_counter() - t0
hook, plain = [], []
for i in range(150):
    hook.append(t(["turn-start", "--from-hook=claude-code"], payload))
    plain.append(t(["-q", "-C", proj, "turn-start", "--session", "s", "--label", "p"], b""))
d.terminate()
print("from-hook %.3f ms  plain %.3f ms  diff %.0f us" % (statistics.median(hook)*1e3, statistics.median(plain)*1e3, (statistics.median(hook)-statistics.median(plain))*1e6))
