"""The official Python SDK, 2.x line (`mcp.client.Client` over `streamable_http_client`), against
the running worker. In its default "auto" mode it probes `server/discover` with
MCP-Protocol-Version 2026-07-28 first; "legacy" forces the initialize handshake."""

from __future__ import annotations

import http.server
import importlib.metadata
import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request

import httpx2
import pytest
from fg_e2e import (
    BASE,
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
    send_json,
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


# execute_tool against a recording upstream on 127.0.0.1: a throwaway tenant with a private
# connector on it (plain http to loopback is allowed by the e2e deployment's ALLOW_LOOPBACK_HTTP).

UPSTREAM_CREDENTIAL = "e2e-upstream-secret"  # T_PYEXEC__UPSTREAM_TOKEN of scripts/e2e.sh


def admin(method, route, body=None):
    request = urllib.request.Request(
        f"{BASE}/admin/v1/{route}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {os.environ['FG_ADMIN_SECRET']}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture(scope="module")
def upstream_tenant():
    recorded = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the stdlib's name)
            recorded.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
            url = urllib.parse.urlsplit(self.path)
            send_json(self, 200, {"method": "GET", "path": url.path, "query": dict(urllib.parse.parse_qsl(url.query))})

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    # Fixed: its credential is named for it (T_PYEXEC__…), as scripts/e2e.sh sets it.
    tenant = "pyexec"
    catalog = {
        "schema": 1,
        "tenant": tenant,
        "private_connectors": [{
            "id": "py-stand-in",
            "label": "Py Stand In",
            "origin": f"http://127.0.0.1:{server.server_address[1]}",
            "base_path": "/v1",
            "auth": {"scheme": "bearer"},
            "tools": [{
                "name": "get_item",
                "description": "Get one item by its id.",
                "inputSchema": {"type": "object", "properties": {"item_id": {"type": "string"}, "view": {"type": "string"}}, "required": ["item_id"]},
                "operation": {"method": "GET", "path": "/items/{item_id}", "query": ["view"]},
            }],
        }],
        "connections": [{"id": "main", "connector": "py-stand-in", "label": "Main", "credential": "T_PYEXEC__UPSTREAM_TOKEN"}],
    }
    policy = {"schema": 1, "tenant": tenant, "roles": {"member": {"connectors": {"allow": ["py-stand-in"]}}}}
    try:
        for doc, body in (("catalog", catalog), ("policy", policy)):
            status, answer = admin("PUT", f"tenants/{tenant}/{doc}", body)
            assert status == 200, f"PUT {doc}: {answer}"
        status, answer = admin("PUT", f"tenants/{tenant}/members/py1", {"role": "member"})
        assert status == 200, answer
        status, answer = admin("POST", f"tenants/{tenant}/members/py1/grants", {"label": "e2e"})
        assert status == 201, answer
        yield answer["grant"], recorded
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", MODES)
def test_execute_tool_reaches_the_upstream(mode, upstream_tenant):
    grant, recorded = upstream_tenant

    async def body(client):
        return await client.call_tool("execute_tool", {"name": "get_item", "arguments": {"item_id": "a b+c", "view": "full"}})

    recorded.clear()
    result = connected(grant, mode, body)
    assert not result.is_error, result
    assert result.structured_content == {"method": "GET", "path": "/v1/items/a%20b%2Bc", "query": {"view": "full"}}
    assert [r["path"] for r in recorded] == ["/v1/items/a%20b%2Bc?view=full"]
    assert recorded[0]["headers"]["authorization"] == f"Bearer {UPSTREAM_CREDENTIAL}"
    assert grant not in json.dumps(recorded), "the grant is not forwarded"


@pytest.mark.parametrize("mode", MODES)
def test_execute_tool_refusal_is_invalid_params_and_sends_nothing(mode, upstream_tenant):
    grant, recorded = upstream_tenant

    async def body(client):
        with pytest.raises(MCPError) as raised:
            await client.call_tool("execute_tool", {"name": "get_item", "arguments": {"item_id": ".."}})
        return raised.value

    recorded.clear()
    error = connected(grant, mode, body)
    assert error.code == -32602
    assert 'arguments.item_id: fills a URL path segment and cannot be "." or ".."' in str(error)
    assert recorded == []
