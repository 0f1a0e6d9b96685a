#!/usr/bin/env python3
"""Prints a crate's modules bottom-up with the modules each one uses, and
any import cycle, from the graph `cargo modules` (cargo-modules 0.27) prints:

    cargo modules dependencies -p ckptd --lib --no-externs --no-sysroot \\
        --no-fns --no-traits --no-types --no-owns | scripts/module_layers.py [DEPTH]

DEPTH (default 1) is how many path segments below the crate name a module
keeps: 1 folds `project::queue` into `project`.
"""
import collections
import re
import sys

depth = int(sys.argv[1]) if len(sys.argv) > 1 else 1
uses = collections.defaultdict(set)
for line in sys.stdin:
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
width = max(map(len, order), default=0)
for node in order:
    print(f"{node:{width}} -> {', '.join(sorted(uses[node])) or '(nothing)'}")
print("cycles:", "none" if not cycles else "; ".join(" -> ".join(c) for c in cycles))
sys.exit(1 if cycles else 0)
