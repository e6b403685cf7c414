// A loopback proxy that adds a bearer grant to requests that carry none, so a client that cannot
// send an Authorization header (the official conformance suite) can reach the gateway.
//
//   FG_PROXY_GRANT=<grant> node tests/e2e/auth-proxy.mjs --target http://127.0.0.1:8788 --port 8790
//
// Everything else is forwarded as sent — method, path, headers (Host and Origin included, so the
// worker's own Origin check still sees what the client sent) and body — and the answer is
// streamed back unchanged (SSE included). It listens on 127.0.0.1 only.
import http from "node:http";

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, "")] = argv[i + 1];
  return out;
}

const args = parseArgs(process.argv.slice(2));
const grant = process.env.FG_PROXY_GRANT;
if (!args.target || !args.port || !grant) {
  console.error("usage: FG_PROXY_GRANT=<grant> node auth-proxy.mjs --target URL --port PORT");
  process.exit(2);
}
const target = new URL(args.target);
if (target.hostname !== "127.0.0.1") {
  console.error("auth-proxy only forwards to 127.0.0.1");
  process.exit(2);
}

const server = http.createServer((req, res) => {
  // rawHeaders keeps duplicates and the client's spelling; only Authorization may be added.
  const headers = [];
  let hasAuthorization = false;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i].toLowerCase() === "authorization") hasAuthorization = true;
    headers.push(req.rawHeaders[i], req.rawHeaders[i + 1]);
  }
  if (!hasAuthorization) headers.push("Authorization", `Bearer ${grant}`);
  const upstream = http.request(
    {
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers,
      setHost: false,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
      answer.pipe(res);
    },
  );
  upstream.on("error", (error) => {
    if (!res.headersSent) {
      res.writeHead(502, { "Content-Type": "text/plain" });
    }
    res.end(`auth-proxy: upstream error: ${error.message}\n`);
  });
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
});

server.listen(Number(args.port), "127.0.0.1", () => {
  console.log(`auth-proxy listening on http://127.0.0.1:${server.address().port} -> ${target.origin}`);
});
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => process.exit(0));
}
