#!/usr/bin/env bash
# Installs the real agents the `real_agents` test tier drives, from npm, into
# target/agents/<name>/ (one npm prefix each, so their dependencies never mix).
# Pinned versions by default; `--latest` installs each package's newest
# version into target/agents-latest/ instead, to find format drift.
#
#   scripts/agents/install.sh            # pinned, skips what is installed already
#   scripts/agents/install.sh --latest   # newest of each
#
# Prints one line per agent: name, version, the executable's path.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The versions the tier is tested with (the agents tables in README.md and docs/guide/agents.md say the same).
PINNED=(
  "claude-code @anthropic-ai/claude-code 2.1.197 claude"
  "codex @openai/codex 0.171.0 codex"
  "gemini @google/gemini-cli 0.61.0 gemini"
  "opencode opencode-ai 1.18.33 opencode"
)

# Cargo tags the target dir only when it creates it, and the e2e harness
# finds the target dir by that tag: tag it if this script makes it first.
if [ ! -d target ]; then
  mkdir -p target
  printf 'Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cargo.\n' >target/CACHEDIR.TAG
fi

root=target/agents
latest=0
if [ "${1:-}" = "--latest" ]; then
  latest=1
  root=target/agents-latest
fi

for row in "${PINNED[@]}"; do
  read -r name pkg version bin <<<"$row"
  if [ "$latest" = 1 ]; then
    version=$(npm view "$pkg" version)
  fi
  dir="$root/$name"
  stamp="$dir/.installed"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$pkg@$version" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    # --ignore-scripts is not used: Codex and OpenCode pick their platform
    # binary in optional dependencies, which npm installs without scripts,
    # but Claude Code's postinstall links its native build.
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
      "$pkg@$version" >&2
    echo "$pkg@$version" >"$stamp"
  fi
  echo "$name $version $dir/node_modules/.bin/$bin"
done
