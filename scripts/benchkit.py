"""What the hook-path scripts share: a ckptd of its own on a temp project,
and a command timed as a fresh process from posix_spawn to waitpid."""
import os, statistics, subprocess, tempfile, time


class Daemon:
    """`ckptd` on its own socket and data dir, watching a project of FILES
    small files, all under a temp dir (in DIR, if given). Use as a context
    manager; `env` points a ckptctl at it, `proj` is the project."""

    def __init__(self, ckptd, ckptctl, files=50, dir=None, prefix="ckpt-bench-"):
        self.tmp = tempfile.mkdtemp(prefix=prefix, dir=dir)
        sock, data = f"{self.tmp}/ckptd.sock", f"{self.tmp}/data"
        self.proj = f"{self.tmp}/proj"
        os.makedirs(self.proj)
        for i in range(files):
            with open(f"{self.proj}/f{i}.txt", "w") as f:
                f.write(f"file {i}\n" * 20)
        self.env = dict(os.environ, CKPT_SOCKET=sock, CKPT_DATA_DIR=data, CKPT_NO_AUTOSTART="1")
        log = open(f"{self.tmp}/ckptd.log", "w")
        self.process = subprocess.Popen([ckptd, "--socket", sock, "--data-dir", data],
                                        stdout=log, stderr=log)
        deadline = time.time() + 30
        while subprocess.run([ckptctl, "-q", "status"], env=self.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
            assert time.time() < deadline, "ckptd did not start"
            time.sleep(0.01)
        subprocess.run([ckptctl, "-q", "-C", self.proj, "watch"], env=self.env, check=True)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.process.terminate()
        self.process.wait()

    def timed(self, argv, stdin=None):
        """Milliseconds `argv` took, with `stdin` (bytes) on its stdin if
        given; asserts it exited 0."""
        actions = []
        if stdin is not None:
            r, w = os.pipe()
            actions = [(os.POSIX_SPAWN_DUP2, r, 0), (os.POSIX_SPAWN_CLOSE, w)]
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, self.env, file_actions=actions)
        if stdin is not None:
            os.close(r)
            os.write(w, stdin)
            os.close(w)
        _, status = os.waitpid(pid, 0)
        t1 = time.perf_counter_ns()
        assert os.waitstatus_to_exitcode(status) == 0, argv
        return (t1 - t0) / 1e6


def paired(old, new):
    """`old` and `new` timings of the same rounds, summed up in one line."""
    diffs = [b - a for a, b in zip(old, new)]
    slower = sum(d > 0 for d in diffs) / len(diffs)
    return (f"old {statistics.median(old):.3f}  new {statistics.median(new):.3f}"
            f"  new/old {statistics.median(new) / statistics.median(old):.3f}"
            f"  median paired diff {statistics.median(diffs) * 1000:+.0f} us"
            f"  (new slower in {slower:.0%} of rounds)")
