// A stand-in third-party API for the execution figures: answers every request at once with the
// same small JSON document. Loopback only.
//
//   node bench/load/upstream.mjs PORT
import http from "node:http";

const port = Number(process.argv[2] ?? 0);
const answer = Buffer.from(JSON.stringify({ id: "42", status: "open", title: "Load test item", labels: ["bench", "floorgate"] }));
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "Content-Type": "application/json", "Content-Length": answer.length });
    res.end(answer);
  });
});
server.keepAliveTimeout = 30_000;
server.listen(port, "127.0.0.1", () => console.log(`upstream listening on 127.0.0.1:${server.address().port}`));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.close(() => process.exit(0)));
