#!/usr/bin/env bash
# Installs the agent CLIs that tests/it/agents.rs runs for real, at pinned versions, under the
# target directory (the system's npm prefix is left alone): Anthropic's Claude Code and
# OpenAI's Codex, from the npm registry. Run once per machine (the tests never fetch anything);
# it needs the registry the first time. Where it cannot install them (no Node.js or npm, no
# registry), it writes why to target/agent-clis/unavailable, and those tests say they were
# skipped, and why.
#
#   tests/setup-clis.sh && cargo test --locked agents
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE=2.1.197
CODEX=0.171.0

root="${CARGO_TARGET_DIR:-target}/agent-clis"
mkdir -p "$root"
rm -f "$root/unavailable"
want="@anthropic-ai/claude-code@$CLAUDE_CODE @openai/codex@$CODEX"

have() {
    [ -x "$root/node_modules/.bin/claude" ] && [ -x "$root/node_modules/.bin/codex" ] \
        && [ "$("$root/node_modules/.bin/claude" --version 2>/dev/null | cut -d' ' -f1)" = "$CLAUDE_CODE" ] \
        && [ "$("$root/node_modules/.bin/codex" --version 2>/dev/null | cut -d' ' -f2)" = "$CODEX" ]
}

if have; then
    echo "tests/setup-clis.sh: $root has Claude Code $CLAUDE_CODE and Codex $CODEX"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is not installed (Node.js 18 or newer is needed for $want)" > "$root/unavailable"
    echo "tests/setup-clis.sh: $(cat "$root/unavailable"); the agent CLI tests will be skipped" >&2
    exit 0
fi
if ! log=$(npm install --prefix "$root" --no-audit --no-fund --no-save --loglevel=error \
        $want 2>&1); then
    printf 'npm install %s failed: %s\n' "$want" "$(printf '%s' "$log" | tail -n 3 | tr '\n' ' ')" \
        > "$root/unavailable"
    echo "tests/setup-clis.sh: $(cat "$root/unavailable"); the agent CLI tests will be skipped" >&2
    exit 0
fi
if ! have; then
    echo "npm installed $want, but the binaries do not run or report other versions" > "$root/unavailable"
    echo "tests/setup-clis.sh: $(cat "$root/unavailable")" >&2
    exit 0
fi
echo "tests/setup-clis.sh: installed Claude Code $CLAUDE_CODE and Codex $CODEX under $root"
