// The OAuth sign-in and consent pages in a real browser: Debian's headless Chromium, driven by
// playwright-core, signs in with a sign-in code, allows or denies, and lands on a loopback
// client's callback with code, state and iss; a wrong and an expired code are shown on the page;
// the pages refuse to be framed; the whole flow works with JavaScript off. Every page visited is
// kept as a PNG under $FG_ARTEFACTS/pages (scripts/e2e.sh sets it).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { BASE, REQUEST_TIMEOUT_MS, admin, putMember, uniqueId, CLOCK_HEADER, issueGrant, callTool } from "./lib.mjs";

const TENANT = "acme";
const CHROMIUM = "/usr/bin/chromium";
// Without the background-networking flags Chromium keeps dialling out, which this network refuses.
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const SHOTS = join(process.env.FG_ARTEFACTS || new URL("../../target/e2e-artefacts", import.meta.url).pathname, "pages");
const COOKIE = "__Host-floorgate-csrf";
const STEP_TIMEOUT_MS = 20_000;

let browser;
let app; // the loopback client: its callback and a page that frames the gateway
let appOrigin;
let framed = ""; // what the framing page puts in its iframe

before(async () => {
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  app = createServer((req, res) => {
    const path = new URL(req.url, "http://app").pathname;
    res.setHeader("Cache-Control", "no-store");
    if (path === "/callback") {
      // Echoes nothing: the test reads the code from the browser's URL, as a client would.
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end("<!doctype html><title>Back at the app</title><h1>Back at the app</h1>");
    } else if (path === "/frame") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end(`<!doctype html><title>A site that frames the gateway</title><h1>Framed below</h1>` +
        `<iframe id="gate" width="600" height="400" src="${framed.replace(/&/g, "&amp;").replace(/"/g, "&quot;")}"></iframe>`);
    } else if (path === "/favicon.ico") {
      res.writeHead(204).end(); // Chromium asks for one; a 404 would be a console error
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => app.listen(0, "127.0.0.1", resolve));
  appOrigin = `http://127.0.0.1:${app.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (app ? app.close(resolve) : resolve()));
});

/** A fresh browser profile; `errors` collects console errors (CSP refusals among them). */
async function newPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 900, height: 700 }, ...options });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(`${m.text()} (${m.location().url})`); });
  page.on("pageerror", (e) => errors.push(String(e)));
  return { context, page, errors };
}

/** Screenshots named `<test>-<n>-<step>.png`, numbered in the order taken. */
function shooter(name) {
  let n = 0;
  return (page, step) => page.screenshot({ path: join(SHOTS, `${name}-${++n}-${step}.png`), fullPage: true });
}

/** A registered client, a member with a sign-in code, and the authorization URL to open. */
async function flow() {
  const clientName = `Pages e2e ${randomBytes(3).toString("hex")}`;
  const redirect = `${appOrigin}/callback`;
  const registered = await fetch(`${BASE}/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ client_name: clientName, redirect_uris: [redirect], token_endpoint_auth_method: "none" }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  assert.equal(registered.status, 201);
  const clientId = (await registered.json()).client_id;
  const verifier = randomBytes(32).toString("base64url");
  const state = `st-${randomBytes(6).toString("hex")}`;
  const url = new URL(`${BASE}/authorize`);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirect,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state,
    resource: `${BASE}/mcp`,
  }).toString();
  const member = uniqueId("pg");
  await putMember(TENANT, member, "admin");
  const issued = await admin("POST", `tenants/${TENANT}/members/${member}/sign-in-codes`);
  assert.equal(issued.status, 201, issued.text);
  return { clientName, clientId, redirect, verifier, state, url: url.toString(), member, code: issued.json.code };
}

/** Opens the sign-in page and checks it, the headers it came with and the binding cookie. */
async function openSignIn(page, context, f) {
  const response = await page.goto(f.url);
  assert.equal(response.status(), 200);
  const headers = await response.allHeaders();
  assert.match(headers["content-security-policy"] ?? "", /frame-ancestors 'none'/);
  assert.equal(headers["x-frame-options"], "DENY");
  assert.equal((await page.textContent("h1")).trim(), `Sign in to connect ${f.clientName}`);
  const cookies = await context.cookies(BASE);
  const binding = cookies.find((c) => c.name === COOKIE);
  assert.ok(binding, `Chromium kept no ${COOKIE} cookie for ${BASE} (set: ${headers["set-cookie"]}; kept: ${JSON.stringify(cookies)})`);
  assert.equal(binding.secure, true);
  assert.equal(binding.httpOnly, true);
  assert.equal(binding.sameSite, "Lax");
}

/**
 * Clicks a submit button and waits for the page it leads to. Returns the form's POST as the
 * browser sent it (its headers, and its response: a page, or a 302 to the client).
 */
async function submit(page, selector) {
  const posted = page.waitForRequest((r) => r.method() === "POST" && r.isNavigationRequest());
  const navigated = page.waitForEvent("framenavigated", { predicate: (f) => f === page.mainFrame() });
  await page.click(selector);
  const request = await posted;
  await navigated;
  await page.waitForLoadState("load");
  return request;
}

/** Signs in with `code` on the open sign-in page; returns the POST. */
async function signIn(page, code) {
  await page.fill("#code", code);
  return submit(page, "button[type=submit]");
}

/** Checks the consent page names the client, the tenant, the member and what it reaches. */
async function checkConsent(page, f) {
  assert.equal((await page.textContent("h1")).trim(), `Allow ${f.clientName} to use floorgate?`);
  const who = await page.locator("p", { hasText: "Signed in as" }).textContent();
  assert.equal(who.trim(), `Signed in as ${f.member} in ${TENANT}.`);
  const reaches = await page.locator("li").allTextContents();
  assert.ok(reaches.length > 0, "the consent page lists what the member's access reaches");
  assert.ok(reaches.every((r) => r.trim().length > 0), JSON.stringify(reaches));
}

/** The query of the client's callback where the browser ended. */
function callback(page, f) {
  const url = new URL(page.url());
  assert.equal(`${url.origin}${url.pathname}`, f.redirect, `the browser ended at ${page.url()}`);
  return url.searchParams;
}

async function exchange(f, code) {
  const response = await fetch(`${BASE}/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", code, code_verifier: f.verifier, redirect_uri: f.redirect, client_id: f.clientId }).toString(),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: response.status, json: await response.json().catch(() => null) };
}

/** The whole allowed flow in one browser context; `name` prefixes its screenshots. */
async function allowFlow(name, contextOptions = {}) {
  const shot = shooter(name);
  const f = await flow();
  const { context, page, errors } = await newPage(contextOptions);
  try {
    await openSignIn(page, context, f);
    await shot(page, "sign-in");
    await page.fill("#code", f.code);
    await shot(page, "sign-in-filled");
    const signInPost = await submit(page, "button[type=submit]");
    assert.equal((await signInPost.response()).status(), 200);
    await checkConsent(page, f);
    await shot(page, "consent");
    const consentPost = await submit(page, "button[value=allow]");
    assert.equal((await consentPost.response()).status(), 302);
    await page.waitForURL((u) => u.pathname === "/callback");
    await shot(page, "callback");
    const query = callback(page, f);
    assert.equal(query.get("state"), f.state);
    assert.equal(query.get("iss"), BASE, "RFC 9207 iss");
    assert.match(query.get("code") ?? "", /^fgc1\.acme\./);
    assert.equal(query.get("error"), null);
    const token = await exchange(f, query.get("code"));
    assert.equal(token.status, 200, JSON.stringify(token.json));
    assert.match(token.json.access_token, /^fga1\.acme\./);
    assert.deepEqual(errors, [], "no console errors (a CSP refusal would show here)");
    return { origins: [await signInPost.headerValue("origin"), await consentPost.headerValue("origin")] };
  } finally {
    await context.close();
  }
}

describe("the pages in Chromium", () => {
  test("happy path: sign in, allow, back at the client with code, state and iss; the code buys a token", async () => {
    const { origins } = await allowFlow("happy-path");
    // The pages send no-referrer, so Chromium's form posts carry Origin: null (docs/oauth.md).
    assert.deepEqual(origins, ["null", "null"]);
  });

  test("a wrong code: the sign-in page again, saying the code is not known", async () => {
    const shot = shooter("wrong-code");
    const f = await flow();
    const { context, page } = await newPage();
    try {
      await openSignIn(page, context, f);
      const posted = await signIn(page, `fgs1.acme.${randomBytes(32).toString("base64url")}`);
      assert.equal((await posted.response()).status(), 400);
      await shot(page, "refused");
      const alert = await page.getByRole("alert").textContent();
      assert.match(alert, /sign-in code is not known/);
      assert.equal(await page.locator("#code").count(), 1, "the form is offered again");
    } finally {
      await context.close();
    }
  });

  test("an expired code: the page says it expired", async () => {
    const shot = shooter("expired-code");
    const f = await flow();
    const { context, page } = await newPage();
    try {
      await openSignIn(page, context, f);
      await shot(page, "sign-in");
      // Only the sign-in post runs 16 minutes later: past the code's 15, inside the form's 30.
      await context.setExtraHTTPHeaders({ [CLOCK_HEADER]: String(16 * 60 * 1000) });
      const posted = await signIn(page, f.code);
      assert.equal(await posted.headerValue(CLOCK_HEADER), String(16 * 60 * 1000));
      assert.equal((await posted.response()).status(), 400);
      await shot(page, "refused");
      assert.match(await page.getByRole("alert").textContent(), /sign-in code expired/);
    } finally {
      await context.close();
    }
  });

  test("deny: back at the client with access_denied and the state", async () => {
    const shot = shooter("deny");
    const f = await flow();
    const { context, page } = await newPage();
    try {
      await openSignIn(page, context, f);
      await signIn(page, f.code);
      await checkConsent(page, f);
      await shot(page, "consent");
      const posted = await submit(page, "button[value=deny]");
      assert.equal((await posted.response()).status(), 302);
      await page.waitForURL((u) => u.pathname === "/callback");
      await shot(page, "callback");
      const query = callback(page, f);
      assert.equal(query.get("error"), "access_denied");
      assert.equal(query.get("state"), f.state);
      assert.equal(query.get("code"), null);
    } finally {
      await context.close();
    }
  });

  test("another site cannot frame the sign-in page", async () => {
    const shot = shooter("framing");
    const f = await flow();
    framed = f.url;
    const { context, page, errors } = await newPage();
    try {
      const gate = page.waitForResponse((r) => r.url() === f.url);
      await page.goto(`${appOrigin}/frame`);
      const answered = await gate;
      // The gateway answered the frame's request; the browser refused to show it.
      assert.equal(answered.status(), 200);
      assert.equal((await answered.allHeaders())["x-frame-options"], "DENY");
      await page.waitForLoadState("load");
      await shot(page, "framed");
      const frame = page.frames().find((fr) => fr !== page.mainFrame());
      assert.ok(frame, "the iframe exists");
      assert.equal(frame.url(), "chrome-error://chromewebdata/", "Chromium put its error page in the frame");
      assert.equal(await frame.locator("#code").count(), 0, "no sign-in form rendered in the frame");
      assert.ok(errors.some((e) => e.includes("frame-ancestors 'none'")), `Chromium names the CSP directive: ${JSON.stringify(errors)}`);
    } finally {
      await context.close();
    }
  });

  test("no JavaScript needed: the whole flow with JavaScript disabled", async () => {
    await allowFlow("no-javascript", { javaScriptEnabled: false });
  });

  test("the account paste page (issue 19): paste a key, connected, the key never shown; no JavaScript", async () => {
    const shot = shooter("connect-account");
    const tenant = "pgacct";
    const documents = {
      catalog: {
        schema: 1, tenant,
        private_connectors: [{
          id: "stand-in", label: "Stand In", origin: "http://127.0.0.1:9", auth: { scheme: "bearer" },
          tools: [{ name: "get_item", description: "Get one item.", inputSchema: { type: "object", properties: {} }, operation: { method: "GET", path: "/items" } }],
        }],
        connections: [{ id: "mine", connector: "stand-in", label: "My Stand In", account: "personal" }],
      },
      policy: { schema: 1, tenant, roles: { member: { connectors: { allow: ["*"] }, connect: { allow: ["*"] } } } },
    };
    for (const [doc, body] of Object.entries(documents)) {
      const put = await admin("PUT", `tenants/${tenant}/${doc}`, body);
      assert.equal(put.status, 200, put.text);
    }
    await putMember(tenant, "pat", "member");
    const { grant } = await issueGrant(tenant, "pat");
    const linked = await callTool(grant, "connect_account", { connection: "mine" });
    const url = linked.json.result.structuredContent.url;
    const key = `pasted-${randomBytes(8).toString("hex")}`;
    const { context, page, errors } = await newPage({ javaScriptEnabled: false });
    try {
      const response = await page.goto(url);
      assert.equal(response.status(), 200);
      assert.match((await response.allHeaders())["content-security-policy"] ?? "", /frame-ancestors 'none'/);
      assert.equal((await page.textContent("h1")).trim(), "Connect your Stand In account");
      assert.equal(await page.getAttribute("#key", "type"), "password");
      await shot(page, "form");
      await page.click("button[type=submit]"); // empty: the browser's `required` holds it back
      await page.fill("#key", "   ");
      await submit(page, "button[type=submit]");
      assert.match(await page.textContent(".error"), /The key is empty/);
      await shot(page, "empty-key");
      await page.fill("#key", key);
      await submit(page, "button[type=submit]");
      assert.equal((await page.textContent("h1")).trim(), "Account connected");
      assert.ok(!(await page.content()).includes(key), "the key is not on the page");
      await shot(page, "connected");
      // The link is spent: opening it again says so.
      const again = await page.goto(url);
      assert.equal(again.status(), 410);
      assert.match(await page.textContent(".error"), /already used/);
      await shot(page, "link-used");
      // Chromium logs the refusals' statuses (400, 410) as load errors; nothing else, no CSP one.
      assert.deepEqual(errors.filter((e) => !/status of 4(00|10)/.test(e)), []);
    } finally {
      await context.close();
    }
  });
});