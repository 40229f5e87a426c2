#!/usr/bin/env python3
"""An MCP client someone else wrote (the official `mcp` SDK from PyPI) calling `askrelay mcp`.

Usage: python3 tests/mcp_python_client.py ASKRELAY_BINARY [flags for `askrelay mcp`...]

It starts `ASKRELAY_BINARY mcp FLAGS` over stdio with this process's environment (so
ASKRELAY_SOCKET_PATH reaches it), initializes, lists the tools, calls ask_user_question once
with a progress callback, and prints one line per step on stdout:

    initialized <server name> <protocol version>
    tools <tool names, comma-separated>
    calling ask_user_question
    progress <message>            (one or more; the first says where the question was posted)
    is_error <True|False>
    text <the result's text content>

tests/mcp.rs runs it against a daemon it starts and answers from the terminal after the first
`progress` line. A person can run it by hand against `askrelay serve` and answer with
`askrelay answer`. Needs the `mcp` package: tests/setup-python.sh makes a venv with 1.x and
one with 2.x under target/mcp-sdk/, and the tests run this script with each.
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

QUESTIONS = {
    "questions": [
        {
            "id": "cleanup",
            "question": "Proceed with the destructive cleanup?",
            "header": "Confirm",
            "options": [
                {
                    "label": "Yes, delete them (Recommended)",
                    "description": "Removes the three stale files.",
                },
                {"label": "No, keep them", "description": "Aborts the cleanup."},
            ],
            "multiSelect": False,
        }
    ]
}


def say(*parts: object) -> None:
    print(*parts, flush=True)


def field(obj: object, snake: str, camel: str) -> object:
    """SDK 1.x spells result fields as on the wire (serverInfo); 2.x in snake case."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def main(binary: str, flags: list[str]) -> int:
    params = StdioServerParameters(command=binary, args=["mcp", *flags], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            server_info = field(init, "server_info", "serverInfo")
            say("initialized", server_info.name, field(init, "protocol_version", "protocolVersion"))
            tools = await session.list_tools()
            say("tools", ",".join(t.name for t in tools.tools))

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                say("progress", message)

            say("calling ask_user_question")
            result = await session.call_tool(
                "ask_user_question", QUESTIONS, progress_callback=on_progress
            )
            say("is_error", field(result, "is_error", "isError"))
            for block in result.content:
                say("text", block.text)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2:])))
