#!/usr/bin/env python3
"""Prints a crate's modules bottom-up with the modules each one uses, and
any import cycle, from the graph `cargo modules` (cargo-modules 0.27) prints:

    cargo modules dependencies -p ckptd --lib --no-externs --no-sysroot \\
        --no-fns --no-traits --no-types --no-owns | scripts/module_layers.py [DEPTH]

DEPTH (default 1) is how many path segments below the crate name a module
keeps: 1 folds `project::queue` into `project`.

    scripts/module_layers.py --all [DEPTH]

runs `cargo modules` itself on every library and executable of the
workspace (from `cargo metadata`) and checks each; exit 1 if any has a
cycle.
"""
import collections
import json
import re
import subprocess
import sys


def layers(lines, depth):
    """The modules bottom-up with what each uses, and the cycles."""
    uses = collections.defaultdict(set)
    for line in lines:
        m = re.match(r'\s*"([^"]+)" -> "([^"]+)" \[label="uses"', line)
        if not m:
            continue
        a, b = ("::".join(n.split("::")[1 : 1 + depth]) for n in m.groups())
        if a and b and a != b:
            uses[a].add(b)
            uses[b]

    order, state, cycles = [], {}, []

    def visit(node, path):
        if state.get(node) == "open":
            cycles.append(path[path.index(node):] + [node])
            return
        if node in state:
            return
        state[node] = "open"
        for dep in sorted(uses[node]):
            visit(dep, path + [node])
        state[node] = "done"
        order.append(node)

    for node in sorted(uses):
        visit(node, [])
    return [(n, sorted(uses[n])) for n in order], cycles


def report(rows, cycles):
    width = max((len(n) for n, _ in rows), default=0)
    for node, deps in rows:
        print(f"{node:{width}} -> {', '.join(deps) or '(nothing)'}")
    print("cycles:", "none" if not cycles else "; ".join(" -> ".join(c) for c in cycles))


def targets():
    """(package, --lib or --bin NAME) of every workspace target that has modules."""
    meta = json.loads(subprocess.check_output(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"]))
    for pkg in sorted(meta["packages"], key=lambda p: p["name"]):
        for t in pkg["targets"]:
            if "lib" in t["kind"]:
                yield pkg["name"], ["--lib"]
            elif "bin" in t["kind"]:
                yield pkg["name"], ["--bin", t["name"]]


def check_all(depth):
    failed = False
    for pkg, target in targets():
        out = subprocess.run(
            ["cargo", "modules", "dependencies", "-p", pkg, *target, "--no-externs",
             "--no-sysroot", "--no-fns", "--no-traits", "--no-types", "--no-owns"],
            capture_output=True, text=True)
        print(f"## {pkg} {' '.join(target)}")
        if out.returncode != 0:
            print(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "cargo modules failed")
            failed = True
            continue
        rows, cycles = layers(out.stdout.splitlines(), depth)
        report(rows, cycles)
        failed |= bool(cycles)
        print()
    return failed


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--all":
        sys.exit(1 if check_all(int(args[1]) if len(args) > 1 else 1) else 0)
    rows, cycles = layers(sys.stdin, int(args[0]) if args else 1)
    report(rows, cycles)
    sys.exit(1 if cycles else 0)
