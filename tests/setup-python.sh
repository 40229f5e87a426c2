#!/usr/bin/env bash
# Makes the Python environments the tests need, without touching the system Python (PEP 668):
# two virtual environments under the target directory, one with the official MCP Python SDK
# 1.x and one with 2.x, for tests/it/mcp.rs to drive `askrelay mcp` with both. Run once per
# machine (again to upgrade); it needs PyPI the first time, the tests never do.
#
#   tests/setup-python.sh && cargo test --locked
#
# On Debian and Ubuntu, `python3 -m venv` needs the python3-venv package.
set -euo pipefail
cd "$(dirname "$0")/.."
root="${CARGO_TARGET_DIR:-target}/mcp-sdk"

make_venv() {
    local name=$1 spec=$2
    local dir="$root/$name"
    if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c 'import mcp' 2>/dev/null; then
        return
    fi
    rm -rf "$dir"
    mkdir -p "$root"
    if ! python3 -m venv "$dir" 2>/dev/null; then
        echo "tests/setup-python.sh: python3 -m venv failed; on Debian or Ubuntu: sudo apt install python3-venv" >&2
        exit 1
    fi
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
    echo "tests/setup-python.sh: $dir has $("$dir/bin/python" -c 'import importlib.metadata as m; print("mcp", m.version("mcp"))')"
}

make_venv v1 'mcp>=1,<2'
make_venv v2 'mcp>=2,<3'
