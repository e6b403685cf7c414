"""The official Python SDK, 1.x line (`streamablehttp_client`), against the running worker."""

from __future__ import annotations

import importlib.metadata

import pytest
from fg_e2e import (
    DEMO_GRANT,
    DEMO_MEMBER,
    DEMO_ROLE,
    GRANTS,
    HANDSHAKE_VERSIONS,
    MCP_URL,
    TENANT,
    bearer,
    run,
    walk_tool_pages,
)
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError
from mcp.types import LATEST_PROTOCOL_VERSION


def test_runs_under_mcp_1x():
    assert importlib.metadata.version("mcp").startswith("1."), "this file is for the mcp 1.x venv"


def session(grant, body):
    async def go():
        async with streamablehttp_client(MCP_URL, headers=bearer(grant), timeout=20) as (read, write, get_session_id):
            async with ClientSession(read, write) as s:
                init = await s.initialize()
                return await body(s, init, get_session_id)

    return run(go)


def test_initialize_negotiates_and_names_the_server():
    async def body(s, init, get_session_id):
        assert LATEST_PROTOCOL_VERSION in HANDSHAKE_VERSIONS
        assert init.protocolVersion == LATEST_PROTOCOL_VERSION
        assert init.serverInfo.name == "floorgate"
        assert init.capabilities.tools is not None
        assert get_session_id() is None, "a stateless gateway issues no Mcp-Session-Id"

    session(DEMO_GRANT, body)


def test_list_tools_with_pagination():
    async def body(s, init, _):
        return await walk_tool_pages(lambda cursor: s.list_tools(cursor=cursor))

    tools = session(DEMO_GRANT, body)
    whoami = next(t for t in tools if t.name == "whoami")
    assert whoami.inputSchema["type"] == "object"
    assert whoami.description


def test_whoami_with_the_bearer_grant():
    async def body(s, init, _):
        return await s.call_tool("whoami", {})

    result = session(DEMO_GRANT, body)
    assert not result.isError
    identity = result.structuredContent
    assert (identity["tenant"], identity["member"], identity["role"]) == (TENANT, DEMO_MEMBER, DEMO_ROLE)
    assert identity["grant"].startswith("g_")


def test_whoami_for_another_member():
    async def body(s, init, _):
        return await s.call_tool("whoami", {})

    result = session(GRANTS["bob"], body)
    assert result.structuredContent["member"] == "bob"
    assert result.structuredContent["role"] == "admin"


def test_unknown_tool_is_invalid_params():
    async def body(s, init, _):
        with pytest.raises(McpError) as raised:
            await s.call_tool("no_such_tool_e2e", {})
        return raised.value.error

    error = session(DEMO_GRANT, body)
    assert error.code == -32602
    assert 'unknown tool "' in error.message


def test_ping():
    async def body(s, init, _):
        return await s.send_ping()

    assert session(DEMO_GRANT, body).model_dump(exclude_none=True) in ({}, {"meta": None})


def test_no_grant_cannot_initialize():
    async def body(s, init, _):
        raise AssertionError("initialize succeeded without a grant")

    with pytest.raises(BaseException) as raised:
        session(None, body)
    assert "401" in repr(raised.value) or "nauthorized" in repr(raised.value), repr(raised.value)


def test_search_tools_finds_a_github_tool_for_the_admin():
    async def body(s, init, _):
        return await s.call_tool("search_tools", {"query": "create github issue"})

    result = session(GRANTS["bob"], body)
    assert not result.isError
    hits = result.structuredContent["results"]
    assert hits and hits[0]["name"] == "create_issue"
    assert all(h["coverage"] >= 0.5 for h in hits)
    assert all(h["name"] not in ("whoami", "list_connectors", "search_tools", "execute_tool") for h in hits)


def test_seed_incident_empty_and_explained():
    async def body(s, init, _):
        return await s.call_tool("search_tools", {"query": "list_all_cal_com_schedules", "explain": True})

    result = session(GRANTS["nora"], body)
    assert not result.isError
    answer = result.structuredContent
    assert answer["results"] == []
    tokens = {t["token"]: t for t in answer["explanation"]["tokens"]}
    assert list(tokens) == ["list", "all", "cal", "com", "schedules"]
    assert all(tokens[t]["df"] == 0 for t in ("cal", "com", "schedules"))
    assert answer["explanation"]["uncovered"] == ["cal", "com", "schedules"]
