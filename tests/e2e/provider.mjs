// The SaaS's authorization server for the oauth-accounts suite: oauth2-mock-server (npm, pinned
// in package.json) answering on 127.0.0.1 through its own request handler. This file only puts a
// recording listener in front of it and uses the library's event hooks, the way a provider's
// own behaviour would show: every request is recorded (path, query, headers, form body), the
// client's credentials are checked at /token, each access token gets a unique id, refresh tokens
// are remembered so a revoked one (consent withdrawn, or revoked through /revoke) gets
// invalid_grant, and token requests can be slowed so concurrent calls overlap a refresh.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { OAuth2Issuer, OAuth2Service, Events } from "oauth2-mock-server";

export async function startProvider({ clientId, clientSecret, tokenDelayMs = 0 }) {
  const issuer = new OAuth2Issuer();
  await issuer.keys.generate("RS256");
  const service = new OAuth2Service(issuer);
  const requests = [];
  /** Refresh tokens the provider issued, and those no longer good. */
  const issued = new Set();
  const revoked = new Set();
  let revokeStatus = 200;
  const expectedBasic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString("base64")}`;

  // A unique id in every JWT, so two members connecting in the same second get different tokens.
  service.on(Events.BeforeTokenSigning, (token) => {
    token.payload.jti = randomUUID();
  });
  service.on(Events.BeforeResponse, (response, req) => {
    const body = req.body ?? {};
    const record = req.fgRecord;
    if (record) {
      record.form = { ...body };
      record.status = response.statusCode;
    }
    const refuse = (status, error) => {
      response.statusCode = status;
      response.body = { error };
      if (record) record.status = status;
    };
    if (req.headers.authorization !== expectedBasic) return refuse(401, "invalid_client");
    if (body.grant_type === "refresh_token" && (!issued.has(body.refresh_token) || revoked.has(body.refresh_token))) {
      return refuse(400, "invalid_grant");
    }
    if (response.statusCode === 200 && typeof response.body.refresh_token === "string") {
      issued.add(response.body.refresh_token);
    }
    if (record) record.answer = { ...response.body };
  });
  service.on(Events.BeforeRevoke, (response) => {
    response.statusCode = revokeStatus;
  });

  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://provider");
    const record = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: { ...req.headers } };
    requests.push(record);
    req.fgRecord = record;
    if (url.pathname === "/revoke") {
      // The library's revocation endpoint answers without reading the form: read it here first.
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        record.form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString("utf8")));
        if (record.headers.authorization === expectedBasic && revokeStatus === 200 && record.form.token) revoked.add(record.form.token);
        record.status = revokeStatus;
        service.requestHandler(req, res);
      });
      return;
    }
    if (url.pathname === "/token" && tokenDelayMs > 0) {
      setTimeout(() => service.requestHandler(req, res), tokenDelayMs);
      return;
    }
    service.requestHandler(req, res);
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const origin = `http://127.0.0.1:${server.address().port}`;
  issuer.url = origin;
  return {
    origin,
    requests,
    /** Token requests of one grant type. */
    tokenRequests: (grantType) => requests.filter((r) => r.path === "/token" && r.form?.grant_type === grantType),
    /** Every access and refresh token the provider handed out. */
    tokensIssued: () => requests.flatMap((r) => [r.answer?.access_token, r.answer?.refresh_token]).filter(Boolean),
    /** The member withdrew consent at the provider: this refresh token stops working. */
    withdrawConsent: (refreshToken) => revoked.add(refreshToken),
    /** The status /revoke answers with from now on (200 by default). */
    setRevokeStatus: (status) => { revokeStatus = status; },
    async close() {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
