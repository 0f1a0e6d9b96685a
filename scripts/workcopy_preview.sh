#!/bin/sh
# Times `workcopy preview` against `workcopy export` on a 2,000-file git
# repository whose `--base HEAD` work copy changes 1,000 files (issue 33).
# Usage: scripts/workcopy_preview.sh BIN_DIR [ROUNDS]  (BIN_DIR holds ckptctl,
# ckptd and ckpt-workcopy). Prints each round's seconds and the ratio.
set -eu
bin=$(cd "$1" && pwd); rounds=${2:-3}
t=$(mktemp -d); d=
trap '[ -n "$d" ] && kill "$d"; rm -rf "$t"' EXIT
export XDG_DATA_HOME="$t/data" XDG_RUNTIME_DIR="$t/run" XDG_CONFIG_HOME="$t/config" HOME="$t"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@e GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@e
mkdir -p "$t/run" && chmod 700 "$t/run" && mkdir "$t/p" && cd "$t/p"
"$bin/ckptd" >"$t/ckptd.log" 2>&1 & d=$!
export CKPT_NO_AUTOSTART=1
until "$bin/ckptctl" status >/dev/null 2>&1; do sleep 0.2; done
git init -q -b main .
i=0; while [ $i -lt 2000 ]; do mkdir -p d$((i % 20)); seq 1 40 | sed "s/^/file $i line /" > d$((i % 20))/f$i.txt; i=$((i + 1)); done
git add -A && git commit -qm base
"$bin/ckptctl" watch >/dev/null
copy=$("$bin/ckptctl" --json workcopy create --name w | sed -n 's/.*"copy": *"\([^"]*\)".*/\1/p')
i=0; while [ $i -lt 1000 ]; do echo changed >> "$copy/d$((i % 20))/f$i.txt"; i=$((i + 1)); done
secs() { s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
p=0; x=0; r=0
while [ $r -lt "$rounds" ]; do
  a=$(secs "$bin/ckptctl" workcopy preview w); rm -rf "$t/out"
  b=$(secs "$bin/ckptctl" workcopy export w --out "$t/out")
  echo "round $r: preview $a s, export $b s"
  p=$(echo "$p + $a" | bc); x=$(echo "$x + $b" | bc); r=$((r + 1))
done
echo "preview/export: $(echo "scale=2; $p / $x" | bc)"
