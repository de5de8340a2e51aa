"""Drives `kubectl-tfjob mcp` with the official MCP Python SDK (PyPI `mcp`), over stdio.

Usage: client.py PLAN_JSON BINARY [SERVER_ARGS...]

PLAN_JSON is a list of steps: {"op": "list_tools"} | {"op": "call", "tool": T, "args": {...}} |
{"op": "list_resources"} | {"op": "list_resource_templates"} | {"op": "read", "uri": U} |
{"op": "cancel", "tool": T, "args": {...}, "when": PATH}: the call is started, then cancelled by
the SDK (which sends `notifications/cancelled`) once the file PATH exists. A call step may set
"read_timeout" (seconds).
Prints one JSON list, a result per step, as the SDK returned it (model_dump, by alias); a step
the server refused at the protocol level is {"error": MESSAGE}. The Rust tests assert on it.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    plan = json.loads(sys.argv[1])
    server = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
    results = []
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for step in plan:
                op = step["op"]
                try:
                    if op == "list_tools":
                        r = await session.list_tools()
                    elif op == "call":
                        timeout = step.get("read_timeout")
                        r = await session.call_tool(step["tool"], step.get("args", {}), read_timeout_seconds=timeout)
                    elif op == "cancel":
                        task = asyncio.create_task(session.call_tool(step["tool"], step.get("args", {})))
                        while not os.path.exists(step["when"]):
                            await asyncio.sleep(0.05)
                        task.cancel()
                        try:
                            await task
                        except asyncio.CancelledError:
                            pass
                        results.append({"cancelled": task.cancelled()})
                        continue
                    elif op == "list_resources":
                        r = await session.list_resources()
                    elif op == "list_resource_templates":
                        r = await session.list_resource_templates()
                    elif op == "read":
                        r = await session.read_resource(step["uri"])
                    else:
                        raise SystemExit(f"unknown op {op!r}")
                    results.append(r.model_dump(mode="json", by_alias=True, exclude_none=True))
                except Exception as e:  # a protocol-level refusal is a result to assert on
                    results.append({"error": str(e)})
    print(json.dumps(results))


asyncio.run(main())
