"""The official Python SDK, 2.x line (`mcp.client.Client` over `streamable_http_client`), against
the running worker. In its default "auto" mode it probes `server/discover` with
MCP-Protocol-Version 2026-07-28 first; "legacy" forces the initialize handshake."""

from __future__ import annotations

import importlib.metadata

import httpx2
import pytest
from fg_e2e import (
    DEMO_GRANT,
    DEMO_MEMBER,
    DEMO_ROLE,
    GRANTS,
    HANDSHAKE_VERSIONS,
    MCP_URL,
    STATELESS_VERSION,
    TENANT,
    bearer,
    run,
    walk_tool_pages,
)
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

MODES = ["auto", "legacy"]


def test_runs_under_mcp_2x():
    assert importlib.metadata.version("mcp").startswith("2."), "this file is for the mcp 2.x venv"


def connected(grant, mode, body, statuses=None):
    async def record(response):
        if statuses is not None:
            statuses.append(response.status_code)

    async def go():
        async with httpx2.AsyncClient(headers=bearer(grant), timeout=20, event_hooks={"response": [record]}) as http:
            async with Client(streamable_http_client(MCP_URL, http_client=http), mode=mode) as client:
                return await body(client)

    return run(go)


def test_auto_mode_discovers_the_stateless_revision():
    async def body(client):
        assert client.session.discover_result is not None, "server/discover was answered and adopted"
        return client.protocol_version, client.session.discover_result

    version, discovered = connected(DEMO_GRANT, "auto", body)
    assert version == STATELESS_VERSION
    assert STATELESS_VERSION in discovered.supported_versions
    assert set(HANDSHAKE_VERSIONS) <= set(discovered.supported_versions)
    assert discovered.capabilities.tools is not None


def test_legacy_mode_initializes():
    async def body(client):
        return client.protocol_version, client.server_info

    version, info = connected(DEMO_GRANT, "legacy", body)
    assert version in HANDSHAKE_VERSIONS
    assert info.name == "floorgate"


@pytest.mark.parametrize("mode", MODES)
def test_list_tools_with_pagination(mode):
    async def body(client):
        return await walk_tool_pages(lambda cursor: client.list_tools(cursor=cursor, cache_mode="bypass"))

    tools = connected(DEMO_GRANT, mode, body)
    whoami = next(t for t in tools if t.name == "whoami")
    assert whoami.input_schema["type"] == "object"


@pytest.mark.parametrize("mode", MODES)
def test_whoami_with_the_bearer_grant(mode):
    async def body(client):
        return await client.call_tool("whoami", {})

    result = connected(DEMO_GRANT, mode, body)
    assert not result.is_error
    identity = result.structured_content
    assert (identity["tenant"], identity["member"], identity["role"]) == (TENANT, DEMO_MEMBER, DEMO_ROLE)


def test_whoami_for_another_member():
    async def body(client):
        return await client.call_tool("whoami", {})

    identity = connected(GRANTS["bob"], "auto", body).structured_content
    assert (identity["member"], identity["role"]) == ("bob", "admin")


@pytest.mark.parametrize("mode", MODES)
def test_unknown_tool_is_invalid_params(mode):
    async def body(client):
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool_e2e", {})
        return raised.value

    error = connected(DEMO_GRANT, mode, body)
    assert error.code == -32602
    assert 'unknown tool "' in str(error)


def test_no_grant_cannot_connect():
    async def body(client):
        raise AssertionError("connected without a grant")

    statuses = []
    with pytest.raises(BaseException) as raised:
        connected(None, "auto", body, statuses)
    leaves = leaf_exceptions(raised.value)
    assert leaves and all(isinstance(e, MCPError) for e in leaves), repr(raised.value)
    assert statuses and set(statuses) == {401}, f"every request was refused with 401: {statuses}"


def leaf_exceptions(error):
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaf_exceptions(inner)]
    return [error]
