"""MCP authorization end to end with the official Python SDK's OAuth client provider (mcp 2.x).

`OAuthClientProvider` discovers the gateway from the 401 on /mcp, registers itself (RFC 7591),
sends the member's browser to /authorize with PKCE; the browser is played here over httpx2 (the
binding cookie, the ticket and the CSRF token of each page, a sign-in code from the admin API,
then "allow"). The provider exchanges the code and the MCP calls act as that member. Then: stored
tokens connect without a new sign-in, an expired token is refreshed by the SDK and rotated, the
spent refresh token presented again revokes the family (and the SDK signs in again), and removing
the member fails the stored access token with `invalid_token`.

A client named by its Client ID Metadata Document runs too: the SDK's own `client_metadata_url`
must be https, which this deployment cannot serve, so the document's loopback URL is handed to the
provider as its stored client id; the gateway fetches and checks the document as for any client.
"""

from __future__ import annotations

import html
import http.server
import importlib.metadata
import threading
import os
import re
import secrets
import time
import urllib.parse

import httpx2
import pytest
from fg_e2e import BASE, MCP_URL, TENANT, run, send_json
from mcp.client import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

ADMIN_SECRET = os.environ["FG_ADMIN_SECRET"]
# Nothing listens there: the browser stops at the 302 and hands its query to the callback handler.
REDIRECT = "http://127.0.0.1:9/callback"
CLIENT_NAME = "floorgate python e2e client"
TIMEOUT = 20


def test_runs_under_mcp_2x():
    assert importlib.metadata.version("mcp").startswith("2."), "this file is for the mcp 2.x venv"


def admin(method, route, body=None):
    response = httpx2.request(
        method,
        f"{BASE}/admin/v1/{route}",
        json=body,
        headers={"Authorization": f"Bearer {ADMIN_SECRET}"},
        timeout=TIMEOUT,
    )
    return response.status_code, response.json() if response.content else None


def new_member(role="admin"):
    member = f"py-oa-{secrets.token_hex(5)}"
    status, answer = admin("PUT", f"tenants/{TENANT}/members/{member}", {"role": role})
    assert status == 200, f"PUT member {member}: {answer}"
    return member


class MemoryStorage:
    """The SDK's TokenStorage, in memory; it outlives each provider, as a file or keychain would."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def form_of(page):
    """The hidden fields of the page's form."""
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    return {name: html.unescape(value) for name, value in fields}


class Browser:
    """One browser of the member, keeping the binding cookie between pages by hand: a `Secure`,
    `__Host-` cookie set over http is not one a cookie jar sends back."""

    def __init__(self):
        self.cookie = None

    async def send(self, method, url, form=None):
        headers = {"Cookie": self.cookie} if self.cookie else {}
        if form is not None:
            # What a browser sends for a form post under `Referrer-Policy: no-referrer`.
            headers["Origin"] = "null"
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.request(method, url, data=form, headers=headers)
        for set_cookie in response.headers.get_list("set-cookie"):
            self.cookie = set_cookie.split(";", 1)[0]
        return response


class SignInRefused(Exception):
    def __init__(self, status, text):
        super().__init__(f"sign-in code refused: {status} {text}")
        self.status = status


class Member:
    """The member at the browser: the provider's redirect handler runs the pages, its callback
    handler returns what the 302 carried."""

    def __init__(self, member):
        self.member = member
        self.authorization_urls: list[str] = []
        self.consent = ""
        self.result: AuthorizationCodeResult | None = None

    async def sign_in_code(self):
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.post(
                f"{BASE}/admin/v1/tenants/{TENANT}/members/{self.member}/sign-in-codes",
                headers={"Authorization": f"Bearer {ADMIN_SECRET}"},
            )
        return response

    async def redirect(self, authorization_url):
        self.authorization_urls.append(authorization_url)
        self.result = None
        issued = await self.sign_in_code()
        if issued.status_code != 201:
            raise SignInRefused(issued.status_code, issued.text)
        code = issued.json()["code"]
        assert code.startswith(f"fgs1.{TENANT}.")

        browser = Browser()
        sign_in = await browser.send("GET", authorization_url)
        assert sign_in.status_code == 200, sign_in.text
        assert browser.cookie and browser.cookie.startswith("__Host-floorgate-csrf="), browser.cookie
        assert "frame-ancestors 'none'" in sign_in.headers.get("content-security-policy", "")
        consent = await browser.send("POST", f"{BASE}/authorize", {**form_of(sign_in.text), "code": code})
        assert consent.status_code == 200, consent.text
        self.consent = consent.text
        back = await browser.send("POST", f"{BASE}/authorize", {**form_of(consent.text), "decision": "allow"})
        assert back.status_code == 302, back.text
        location = urllib.parse.urlsplit(back.headers["location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
        query = dict(urllib.parse.parse_qsl(location.query))
        assert query["code"].startswith(f"fgc1.{TENANT}.")
        self.result = AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    async def callback(self):
        assert self.result is not None, "the pages did not send the browser back"
        return self.result


def provider_for(member, storage):
    return OAuthClientProvider(
        server_url=MCP_URL,
        client_metadata=OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=member.redirect,
        callback_handler=member.callback,
    )


def connect(provider, body, mode="auto"):
    """Runs `body(client)` over a connection authorized by `provider`; returns its answer and the
    requests sent as (method, path, status), the provider's own included."""
    sent = []

    async def record(response):
        sent.append((response.request.method, response.request.url.path, response.status_code))

    async def go():
        async with httpx2.AsyncClient(auth=provider, timeout=TIMEOUT, event_hooks={"response": [record]}) as http:
            async with Client(streamable_http_client(MCP_URL, http_client=http), mode=mode) as client:
                return await body(client)

    return run(go), sent


async def whoami(client):
    result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    return result.structured_content


def raw_whoami(access_token):
    """tools/call whoami with a bearer, outside the SDK: the status and challenge are the point."""
    return httpx2.post(
        MCP_URL,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}},
        headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json, text/event-stream"},
        timeout=TIMEOUT,
    )


def refresh(refresh_token, client_id):
    return httpx2.post(
        f"{BASE}/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id},
        timeout=TIMEOUT,
    )


def signed_in(role="admin"):
    """A new member through the SDK's whole flow; returns (member, storage)."""
    member = Member(new_member(role))
    storage = MemoryStorage()
    identity, _ = connect(provider_for(member, storage), whoami)
    assert identity["member"] == member.member
    return member, storage


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_discovers_registers_signs_in_and_calls_tools(mode):
    member = Member(new_member())
    storage = MemoryStorage()

    async def body(client):
        identity = await whoami(client)
        tools = await client.list_tools(cache_mode="bypass")
        grants = await client.call_tool("list_my_grants", {})
        return identity, tools, grants.structured_content

    (identity, tools, grants), sent = connect(provider_for(member, storage), body, mode)

    assert identity["member"] == member.member
    assert identity["tenant"] == TENANT
    assert tools.tools, "the member sees tools"
    # 401, protected resource metadata from the challenge, AS metadata, registration, token, retry.
    assert sent[:6] == [
        ("POST", "/mcp", 401),
        ("GET", "/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", "/.well-known/oauth-authorization-server", 200),
        ("POST", "/register", 201),
        ("POST", "/token", 200),
        ("POST", "/mcp", 200),
    ], sent

    [url] = member.authorization_urls
    assert url.startswith(f"{BASE}/authorize?")
    params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert params["client_id"] == storage.client_info.client_id
    assert params["code_challenge_method"] == "S256"
    assert params["resource"] == MCP_URL
    assert params["scope"] == "mcp", "the scope the 401 challenge named"
    assert member.result.iss == BASE, "RFC 9207 iss, checked by the SDK against the metadata"

    assert storage.client_info.client_id.startswith("fgdc1.")
    assert storage.tokens.access_token.startswith(f"fga1.{TENANT}.")
    assert storage.tokens.refresh_token.startswith(f"fgr1.{TENANT}.")
    assert storage.tokens.token_type == "Bearer"

    assert CLIENT_NAME in member.consent
    assert f"<strong>{member.member}</strong>" in member.consent
    assert f"<strong>{TENANT}</strong>" in member.consent
    family = next((g for g in grants["grants"] if g.get("client") == CLIENT_NAME), None)
    assert family is not None and family["member"] == member.member, grants


def test_stored_tokens_connect_without_signing_in_again():
    member, storage = signed_in()
    identity, sent = connect(provider_for(member, storage), whoami)
    assert identity["member"] == member.member
    assert len(member.authorization_urls) == 1, "no second authorization"
    assert all(path == "/mcp" and status == 200 for _, path, status in sent), sent


def test_an_expired_token_is_refreshed_by_the_sdk_and_rotated():
    member, storage = signed_in()
    before = storage.tokens
    provider = provider_for(member, storage)
    # The provider keeps the expiry only in memory: a token loaded from storage counts as valid
    # until its first 401, so make it look expired to take the refresh path.
    provider.context.token_expiry_time = time.time() - 1
    identity, sent = connect(provider, whoami)

    assert identity["member"] == member.member
    assert sent[0] == ("POST", "/token", 200), sent
    assert len(member.authorization_urls) == 1, "refreshed, not signed in again"
    after = storage.tokens
    assert after.access_token != before.access_token
    assert after.refresh_token != before.refresh_token, "the refresh token rotates"
    assert after.refresh_token.startswith(f"fgr1.{TENANT}.")
    assert raw_whoami(after.access_token).status_code == 200


def test_a_reused_refresh_token_revokes_the_family_and_the_sdk_signs_in_again():
    member, storage = signed_in()
    spent = storage.tokens
    client_id = storage.client_info.client_id

    fresh = refresh(spent.refresh_token, client_id)
    assert fresh.status_code == 200, fresh.text
    assert fresh.headers.get("cache-control") == "no-store"
    rotated = fresh.json()
    assert rotated["refresh_token"] != spent.refresh_token
    assert raw_whoami(rotated["access_token"]).status_code == 200

    reused = refresh(spent.refresh_token, client_id)
    assert reused.status_code == 400, reused.text
    assert reused.json()["error"] == "invalid_grant"
    assert "already used" in reused.json()["error_description"]
    revoked = raw_whoami(rotated["access_token"])
    assert revoked.status_code == 401, "the family of a reused refresh token is revoked"
    assert 'error="invalid_token"' in revoked.headers.get("www-authenticate", "")
    assert refresh(rotated["refresh_token"], client_id).status_code == 400

    # The SDK holds the rotated pair, now dead: its 401 sends it through the authorization again,
    # with the registration it already has.
    storage.tokens = OAuthToken(**rotated)
    identity, sent = connect(provider_for(member, storage), whoami)
    assert identity["member"] == member.member
    assert len(member.authorization_urls) == 2
    assert sent[0] == ("POST", "/mcp", 401), sent
    assert ("POST", "/register", 201) not in sent, sent
    assert storage.client_info.client_id == client_id
    assert raw_whoami(storage.tokens.access_token).status_code == 200


def test_removing_the_member_fails_the_stored_access_token():
    member, storage = signed_in(role="engineer")
    assert raw_whoami(storage.tokens.access_token).status_code == 200

    status, answer = admin("POST", f"tenants/{TENANT}/members/{member.member}/remove")
    assert status == 200, answer

    after = raw_whoami(storage.tokens.access_token)
    assert after.status_code == 401, after.text
    challenge = after.headers.get("www-authenticate", "")
    assert challenge.startswith("Bearer "), challenge
    assert 'error="invalid_token"' in challenge, challenge
    assert f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"' in challenge, challenge
    gone = refresh(storage.tokens.refresh_token, storage.client_info.client_id)
    assert gone.status_code == 400, gone.text
    assert gone.json()["error"] == "invalid_grant"

    # The SDK starts the authorization again; a removed member gets no sign-in code.
    with pytest.raises(BaseException) as raised:
        connect(provider_for(member, storage), whoami)
    assert len(member.authorization_urls) == 2
    assert any(isinstance(e, SignInRefused) and e.status == 409 for e in leaves(raised.value)), repr(raised.value)


def leaves(error):
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


class DocumentServer:
    """A client's metadata document on loopback (the deployment allows loopback http)."""

    def __init__(self, name):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                document = {"client_id": outer.url, "client_name": name, "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
                send_json(self, 200 if self.path == "/client.json" else 404, document)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/client.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_a_client_named_by_its_metadata_document():
    document = DocumentServer("Python metadata document client")
    try:
        member = Member(new_member())
        storage = MemoryStorage()
        storage.client_info = OAuthClientInformationFull(
            client_id=document.url, redirect_uris=[REDIRECT], token_endpoint_auth_method="none"
        )
        identity, sent = connect(provider_for(member, storage), whoami)
    finally:
        document.close()
    assert identity["member"] == member.member
    assert ("POST", "/register", 201) not in sent, "no registration: the document names the client"
    [url] = member.authorization_urls
    params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert params["client_id"] == document.url
    assert "Python metadata document client" in member.consent, "the name comes from the document"
    assert f"<code>{document.url}</code>" in member.consent
