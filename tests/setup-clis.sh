#!/usr/bin/env bash
# Installs the agent CLIs that tests/it/agents.rs runs for real, at pinned versions, under the
# target directory (the system's npm prefix is left alone): Anthropic's Claude Code and
# OpenAI's Codex, from the npm registry, in $target/agent-clis; GitHub's Copilot CLI in
# $target/agent-clis/copilot (its package unpacks itself under cache/ there); and a newer Claude
# Code, the first kind that honours a hook's "onFailure" (2.1.295 and newer), in
# $target/agent-clis/newer.
# $target is $CARGO_TARGET_DIR when set (a relative one from the repository's root, as cargo
# takes it), else target/: where the tests look (agents.rs, `target_dir`). Run once per
# machine (the tests never fetch anything); it needs the registry the first time. Where it
# cannot install them (no Node.js or npm, no registry), it writes why to `unavailable` in that
# directory, and those tests say they were skipped, and why.
#
#   tests/setup-clis.sh && cargo test --locked agents
set -euo pipefail
cd "$(dirname "$0")/.."

# The oldest Claude Code askrelay supports, and the Codex it is tested with.
CLAUDE_CODE=2.1.197
CODEX=0.171.0
# A Claude Code that knows "onFailure" (setup claude-code --fail-closed). When the registry no
# longer has it, the newest it has from ON_FAILURE on.
CLAUDE_CODE_NEWER=2.1.332
ON_FAILURE=2.1.295
# The GitHub Copilot CLI (askrelay hook copilot).
COPILOT=1.0.102

root="${CARGO_TARGET_DIR:-target}/agent-clis"
newer="$root/newer"
copilot="$root/copilot"
mkdir -p "$root" "$newer" "$copilot"
rm -f "$root/unavailable" "$newer/unavailable" "$copilot/unavailable"
want="@anthropic-ai/claude-code@$CLAUDE_CODE @openai/codex@$CODEX"

version_of() { "$1" --version 2>/dev/null | cut -d' ' -f"$2"; }

have() {
    [ -x "$root/node_modules/.bin/claude" ] && [ -x "$root/node_modules/.bin/codex" ] \
        && [ "$(version_of "$root/node_modules/.bin/claude" 1)" = "$CLAUDE_CODE" ] \
        && [ "$(version_of "$root/node_modules/.bin/codex" 2)" = "$CODEX" ]
}

# Whether version $1 is $ON_FAILURE or newer.
knows_on_failure() {
    [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$ON_FAILURE" "$1" | sort -V | head -n 1)" = "$ON_FAILURE" ]
}

have_newer() {
    [ -x "$newer/node_modules/.bin/claude" ] \
        && knows_on_failure "$(version_of "$newer/node_modules/.bin/claude" 1)"
}

unavailable() { # FILE WHY
    printf '%s\n' "$2" > "$1"
    echo "tests/setup-clis.sh: $2; the tests that need it will be skipped" >&2
}

install() { # PREFIX PACKAGES…; the last lines of npm's complaint on stdout when it fails
    local prefix=$1
    shift
    local log
    if ! log=$(npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error \
            "$@" 2>&1); then
        printf '%s' "$log" | tail -n 3 | tr '\n' ' '
        return 1
    fi
}

if ! command -v npm >/dev/null 2>&1; then
    why="npm is not installed (Node.js 18 or newer is needed for $want)"
    unavailable "$root/unavailable" "$why"
    unavailable "$newer/unavailable" "$why"
    unavailable "$copilot/unavailable" "$why"
    exit 0
fi

if have; then
    echo "tests/setup-clis.sh: $root has Claude Code $CLAUDE_CODE and Codex $CODEX"
elif ! log=$(install "$root" $want); then
    unavailable "$root/unavailable" "npm install $want failed: $log"
elif ! have; then
    unavailable "$root/unavailable" \
        "npm installed $want, but the binaries do not run or report other versions"
else
    echo "tests/setup-clis.sh: installed Claude Code $CLAUDE_CODE and Codex $CODEX under $root"
fi

# Copilot unpacks its package on first run under $XDG_CACHE_HOME/copilot; the tests point that
# at $copilot/cache, so it is done here, once, and never in the developer's home.
copilot_version() {
    XDG_CACHE_HOME="$copilot/cache" COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false \
        "$copilot/node_modules/.bin/copilot" --version 2>/dev/null | head -n 1 | cut -d' ' -f4 | tr -d .
}
if [ -x "$copilot/node_modules/.bin/copilot" ] && [ "$(copilot_version)" = "${COPILOT//./}" ]; then
    echo "tests/setup-clis.sh: $copilot has Copilot $COPILOT"
elif ! log=$(install "$copilot" "@github/copilot@$COPILOT"); then
    unavailable "$copilot/unavailable" "npm install @github/copilot@$COPILOT failed: $log"
elif [ "$(copilot_version)" != "${COPILOT//./}" ]; then
    unavailable "$copilot/unavailable" \
        "npm installed @github/copilot@$COPILOT, but it does not run or reports another version"
else
    echo "tests/setup-clis.sh: installed Copilot $COPILOT under $copilot"
fi

if have_newer; then
    echo "tests/setup-clis.sh: $newer has Claude Code $(version_of "$newer/node_modules/.bin/claude" 1)"
    exit 0
fi
pick=$CLAUDE_CODE_NEWER
if ! log=$(install "$newer" "@anthropic-ai/claude-code@$pick"); then
    # Not (or no longer) in the registry: the newest it has that knows onFailure.
    pick=$(npm view @anthropic-ai/claude-code versions --json 2>/dev/null \
        | tr -d '[]", ' | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -V | tail -n 1 || true)
    if ! knows_on_failure "$pick"; then
        unavailable "$newer/unavailable" \
            "npm install @anthropic-ai/claude-code@$CLAUDE_CODE_NEWER failed ($log), and the registry has no Claude Code $ON_FAILURE or newer"
        exit 0
    fi
    if ! log=$(install "$newer" "@anthropic-ai/claude-code@$pick"); then
        unavailable "$newer/unavailable" "npm install @anthropic-ai/claude-code@$pick failed: $log"
        exit 0
    fi
fi
if ! have_newer; then
    unavailable "$newer/unavailable" \
        "npm installed @anthropic-ai/claude-code@$pick, but it does not run or reports a version before $ON_FAILURE"
    exit 0
fi
echo "tests/setup-clis.sh: installed Claude Code $pick under $newer"
