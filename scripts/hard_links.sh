#!/bin/sh
# Usage: N=5000 sh scripts/hard_links.sh BIN_DIR
# Times the turn-end after `cp -a` and after `cp -al` of N files into a
# watched project, then after appending to 100 files with one link and to
# 100 with two (each recorded under both names), on its own daemon and data dir.
set -u
BIN=$(cd "$1" && pwd); C="$BIN/ckptctl"
S=$(mktemp -d -t h29m-XXXXXX)
mkdir -p "$S/run" "$S/data" "$S/p" && chmod 700 "$S/run"
export XDG_RUNTIME_DIR="$S/run" XDG_DATA_HOME="$S/data" HOME="$S" \
       CKPT_SOCKET="$S/run/ckpt/ckptd.sock" CKPT_DATA_DIR="$S/data/ckpt" CKPT_NO_AUTOSTART=1
"$BIN/ckptd" >"$S/ckptd.log" 2>&1 &
DPID=$!
trap 'kill $DPID 2>/dev/null; wait $DPID 2>/dev/null; rm -rf "$S"' EXIT
i=0; until "$C" status >/dev/null 2>&1; do i=$((i+1)); [ $i -gt 200 ] && exit 2; sleep 0.05; done
cd "$S/p"
N=${N:-5000}
mkdir src; i=0; while [ $i -lt $N ]; do d=src/d$((i % 50)); mkdir -p $d; echo "file $i" > $d/f$i; i=$((i+1)); done
"$C" -q watch .
t() { s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
"$C" -q turn-start; cp -a src copy; echo "cp -a  $N files: turn-end $(t "$C" turn-end) ms"
"$C" -q turn-start; cp -al src links; echo "cp -al $N files: turn-end $(t "$C" turn-end) ms"
"$C" -q turn-start; for f in copy/d0/*; do echo x >> $f; done; echo "append to $(ls copy/d0 | wc -l) one-link files: turn-end $(t "$C" turn-end) ms"
"$C" -q turn-start; for f in links/d0/*; do echo x >> $f; done; echo "append to $(ls links/d0 | wc -l) two-link files: turn-end $(t "$C" turn-end) ms, entries: $("$C" --json show 4 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["turn"]["entries"]))')"
