"""Shared helpers for the Python SDK end-to-end tests (run under both mcp 1.x and 2.x).

scripts/e2e.sh passes the running worker through the environment; see tests/e2e/lib.mjs for
the variables. Tests use anyio.run with a bounded deadline: nothing waits on a clock otherwise.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
STATELESS_VERSION = "2026-07-28"
DEADLINE_SECONDS = 30
_MEMBERS = json.loads((pathlib.Path(__file__).resolve().parents[3] / "fixtures" / "demo" / "members.json").read_text())
DEMO_MEMBER = _MEMBERS[0]["id"]
DEMO_ROLE = _MEMBERS[0]["role"]


def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run the suite through scripts/e2e.sh (see tests/e2e/README.md)")
    return value


BASE = _required("FG_URL").rstrip("/")
MCP_URL = f"{BASE}/mcp"
TENANT = os.environ.get("FG_TENANT", "demo")
PAGE_SIZE = int(_required("FG_PAGE_SIZE"))
with open(_required("FG_GRANTS"), encoding="utf-8") as f:
    GRANTS: dict[str, str] = json.load(f)
DEMO_GRANT = GRANTS[DEMO_MEMBER]


def bearer(grant: str | None) -> dict[str, str]:
    return {} if grant is None else {"Authorization": f"Bearer {grant}"}


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    """Runs one async test body with a deadline."""

    async def bounded() -> Any:
        with anyio.fail_after(DEADLINE_SECONDS):
            return await fn()

    return anyio.run(bounded)


async def walk_tool_pages(list_page: Callable[[str | None], Awaitable[Any]]) -> list[Any]:
    """Walks every tools/list page and checks the pagination rules; returns every tool.

    `list_page(cursor)` returns the SDK's ListToolsResult; its cursor attribute is `nextCursor`
    (1.x) or `next_cursor` (2.x).
    """
    tools: list[Any] = []
    cursors: set[str] = set()
    cursor: str | None = None
    for page in range(1000):
        result = await list_page(cursor)
        assert len(result.tools) <= PAGE_SIZE, f"page {page} has {len(result.tools)} tools, page size {PAGE_SIZE}"
        tools.extend(result.tools)
        next_cursor = getattr(result, "next_cursor", None) if hasattr(result, "next_cursor") else result.nextCursor
        if next_cursor is None:
            break
        assert len(result.tools) == PAGE_SIZE, "only the last page may be short"
        assert next_cursor not in cursors, "a cursor repeats: the listing loops"
        cursors.add(next_cursor)
        cursor = next_cursor
    else:
        raise AssertionError("tools/list never ended (1000 pages)")
    names = [t.name for t in tools]
    assert len(set(names)) == len(names), f"duplicate tools across pages: {names}"
    assert len(cursors) == max(0, -(-len(tools) // PAGE_SIZE) - 1), "pages = ceil(tools / page size)"
    assert "whoami" in names, f"whoami is listed among {names}"
    return tools


def send_json(handler: Any, status: int, value: Any) -> None:
    """Answers a stdlib `BaseHTTPRequestHandler` request with `value` as JSON (test servers)."""
    body = json.dumps(value).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
