// A recording stand-in for a third-party HTTP API, on 127.0.0.1 only. Every request is recorded
// (method, URL, headers, body) before it is answered — and so is a request Node's parser refuses, so tests can assert exactly what left the
// gateway — and that nothing did. Answers by path (below the base path the test catalog uses):
//
//   /v1/text       200 text/plain
//   /v1/fail       500 text/plain "internal failure: database on fire"
//   /v1/echoauth   401 text/plain quoting the Authorization header it got
//   /v1/rate       429 application/json {"error":"rate limited"} with Retry-After
//   /v1/slow       200 JSON, but only after SLOW_MS (longer than the gateway's timeout)
//   /v1/drip       200 text/plain at once, then one byte every 100 ms until SLOW_MS
//   /v1/huge       200 text/plain that never ends
//   /v1/badjson    200 application/json whose body is not JSON
//   /v1/redirect   302 to another origin: a second recording listener on another 127.0.0.1 port
//   anything else  200 application/json echoing {method, path, query, body}
//
// `refuseWhen(test)`: from then on a request for which test(request) holds gets 401
// application/json {"error":"invalid_token"} on any path, as an API answers a token it no
// longer accepts (revoked or rotated at the provider before it expired); null stops it.
// `refusing(test, action)` does so only while `action` runs.
import { createServer } from "node:http";

export const SLOW_MS = 4_000;

export async function startUpstream() {
  const requests = [];
  const timers = new Set();
  let other;
  let refuse = null;
  const handler = (listener) => (req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const url = new URL(req.url, "http://127.0.0.1");
      const record = { listener, method: req.method, url: req.url, path: url.pathname, headers: { ...req.headers }, body };
      requests.push(record);
      const json = (status, value, headers = {}) => {
        record.status = status;
        res.writeHead(status, { "Content-Type": "application/json", ...headers });
        res.end(JSON.stringify(value));
      };
      if (refuse && refuse(record)) {
        return json(401, { error: "invalid_token" }, { "WWW-Authenticate": 'Bearer error="invalid_token"' });
      }
      switch (url.pathname) {
        case "/v1/text":
          res.writeHead(200, { "Content-Type": "text/plain; charset=utf-8" });
          res.end("plain words from upstream");
          return;
        case "/v1/fail":
          res.writeHead(500, { "Content-Type": "text/plain" });
          res.end("internal failure: database on fire");
          return;
        case "/v1/echoauth":
          // An API that quotes the credential it refused: the gateway must not pass it on.
          res.writeHead(401, { "Content-Type": "text/plain" });
          res.end(`credential refused: ${req.headers.authorization ?? ""}`);
          return;
        case "/v1/rate":
          return json(429, { error: "rate limited" }, { "Retry-After": "30" });
        case "/v1/slow": {
          const t = setTimeout(() => {
            timers.delete(t);
            if (!res.destroyed) json(200, { late: true });
          }, SLOW_MS);
          timers.add(t);
          return;
        }
        case "/v1/drip": {
          // Headers at once, then a byte every 100 ms for SLOW_MS: only a deadline that covers
          // the body stops waiting for it.
          res.writeHead(200, { "Content-Type": "text/plain" });
          const t = setInterval(() => { if (!res.destroyed) res.write("."); }, 100);
          timers.add(t);
          const done = setTimeout(() => { clearInterval(t); timers.delete(t); timers.delete(done); if (!res.destroyed) res.end(); }, SLOW_MS);
          timers.add(done);
          res.on("close", () => { clearInterval(t); clearTimeout(done); timers.delete(t); timers.delete(done); });
          return;
        }
        case "/v1/huge": {
          // A body that never ends, as fast as the reader takes it.
          res.writeHead(200, { "Content-Type": "text/plain" });
          const block = Buffer.alloc(1 << 16, "z");
          const pump = () => { while (!res.destroyed && res.write(block)); };
          res.on("drain", pump);
          pump();
          return;
        }
        case "/v1/badjson":
          res.writeHead(200, { "Content-Type": "application/json" });
          res.end("{this is: not json");
          return;
        case "/v1/redirect":
          res.writeHead(302, { Location: `http://127.0.0.1:${other.address().port}/v1/stolen` });
          res.end();
          return;
        default:
          return json(200, { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), body: parsed(body) });
      }
    });
  };
  const parsed = (body) => {
    try {
      return body ? JSON.parse(body) : null;
    } catch {
      return body;
    }
  };
  const listen = async (name) => {
    const s = createServer(handler(name));
    // A request Node refuses before the handler (e.g. headers too large: 431) still left the
    // gateway: record it too.
    s.on("clientError", (error, socket) => {
      requests.push({ listener: name, refused: error.code ?? String(error) });
      socket.destroy();
    });
    await new Promise((resolve, reject) => {
      s.once("error", reject);
      s.listen(0, "127.0.0.1", resolve);
    });
    return s;
  };
  const server = await listen("api");
  other = await listen("other-origin");
  const port = server.address().port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    requests,
    /** From now on, answers 401 to every request `test` holds for (null: none). */
    refuseWhen(test) {
      refuse = test;
    },
    /** Answers 401 as `refuseWhen(test)` while `action` runs, and never after; its result. */
    async refusing(test, action) {
      refuse = test;
      try {
        return await action();
      } finally {
        refuse = null;
      }
    },
    /** Forgets what was recorded so far; returns it. */
    take() {
      return requests.splice(0, requests.length);
    },
    async close() {
      for (const t of timers) { clearTimeout(t); clearInterval(t); }
      for (const s of [server, other]) {
        s.closeAllConnections?.();
        await new Promise((resolve) => s.close(resolve));
      }
    },
  };
}
