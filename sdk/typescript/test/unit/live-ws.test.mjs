// Following a job over graphql-ws against an in-process server speaking
// graphql-transport-ws (the ws package): a close with 4403 (the token
// expired) is followed by one refresh and a new connection whose
// connection_init carries the new token; the iteration ends with the
// subscription's complete. A server that refuses the WebSocket makes
// transport "auto" fall back to SSE.
import assert from "node:assert/strict";
import http from "node:http";
import { afterEach, test } from "node:test";
import WebSocket, { WebSocketServer } from "ws";
import { HeraldClient } from "../../dist/index.js";

let server;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((ok) => (server ? server.close(ok) : ok()));
  server = undefined;
});

const job = (status, sent) => ({ id: "j1", status, subject: "s", totalRecipients: 2, sent, failed: 0, invalidTokens: 0 });

test("graphql-ws: after 4403 the SDK refreshes once and reconnects with the new token", async () => {
  const inits = [];
  let refreshes = 0;
  server = http.createServer((req, res) => {
    if (req.url === "/api/v1/auth/refresh") {
      refreshes++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ success: true, data: { token: "access.2.sig", refreshToken: "refresh-2", tokenType: "Bearer", expiresIn: 900 } }));
      return;
    }
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server, handleProtocols: (p) => (p.has("graphql-transport-ws") ? "graphql-transport-ws" : false) });
  wss.on("connection", (ws) => {
    ws.on("message", (raw) => {
      const m = JSON.parse(String(raw));
      if (m.type === "connection_init") {
        inits.push(m.payload);
        ws.send(JSON.stringify({ type: "connection_ack" }));
      } else if (m.type === "subscribe") {
        assert.match(m.payload.query, /subscription NotificationJobUpdated/);
        assert.deepEqual(m.payload.variables, { id: "j1" });
        const send = (j) => ws.send(JSON.stringify({ id: m.id, type: "next", payload: { data: { notificationJobUpdated: j } } }));
        if (inits.length === 1) {
          send(job("running", 0));
          ws.send(JSON.stringify({ type: "ping" }));
          setTimeout(() => ws.close(4403, "Forbidden"), 20);
        } else {
          send(job("running", 1));
          send(job("completed", 2));
          ws.send(JSON.stringify({ id: m.id, type: "complete" }));
        }
      }
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const c = new HeraldClient({ baseUrl: `http://127.0.0.1:${server.address().port}` });
  await c.setSession({ token: "access.1.sig", refreshToken: "refresh-1", expiresIn: 900 });
  const seen = [];
  for await (const p of c.notifications.follow("j1", { transport: "ws", WebSocket })) seen.push(`${p.status}:${p.sent}`);
  assert.deepEqual(seen, ["running:0", "running:1", "completed:2"]);
  assert.deepEqual(inits, [{ token: "access.1.sig" }, { token: "access.2.sig" }]);
  assert.equal(refreshes, 1);
});

test("auto falls back to SSE when no WebSocket connects", async () => {
  server = http.createServer((req, res) => {
    if (req.url.endsWith("/events")) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`event: progress\nid: 9\ndata: ${JSON.stringify(job("completed", 2))}\n\n`);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok)); // no WebSocket upgrade: the socket is refused
  const c = new HeraldClient({ baseUrl: `http://127.0.0.1:${server.address().port}`, apiKey: "hk_x" });
  const seen = [];
  for await (const p of c.notifications.follow("j1", { WebSocket })) seen.push(`${p.status}:${p.sent}`);
  assert.deepEqual(seen, ["completed:2"]);
});

test("graphql-ws, the inbox: a quiet stream whose token expires again and again (4403 after each ack) keeps reconnecting with fresh tokens", async () => {
  const inits = [];
  let refreshes = 0;
  server = http.createServer((req, res) => {
    if (req.url === "/api/v1/auth/refresh") {
      refreshes++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ success: true, data: { token: `access.${refreshes + 1}.sig`, refreshToken: `refresh-${refreshes + 1}`, tokenType: "Bearer", expiresIn: 2 } }));
      return;
    }
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server, handleProtocols: (p) => (p.has("graphql-transport-ws") ? "graphql-transport-ws" : false) });
  const counts = (item, unread) => ({ data: { inboxChanged: { item, unseen: unread, unread } } });
  wss.on("connection", (ws) => {
    ws.on("message", (raw) => {
      const m = JSON.parse(String(raw));
      if (m.type === "connection_init") {
        inits.push(m.payload);
        ws.send(JSON.stringify({ type: "connection_ack" }));
      } else if (m.type === "subscribe") {
        assert.match(m.payload.query, /subscription InboxChanged/);
        if (inits.length === 1) ws.send(JSON.stringify({ id: m.id, type: "next", payload: counts(null, 0) }));
        // Eight expiries in a row with nothing to say: more than the retry schedule's 5.
        if (inits.length <= 8) setTimeout(() => ws.close(4403, "Forbidden"), 5);
        else ws.send(JSON.stringify({ id: m.id, type: "next", payload: counts({ id: "i1", title: "Hi" }, 1) }));
      }
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const c = new HeraldClient({ baseUrl: `http://127.0.0.1:${server.address().port}` });
  await c.setSession({ token: "access.1.sig", refreshToken: "refresh-1", expiresIn: 2 });
  const seen = [];
  for await (const ev of c.inbox.follow({ transport: "ws", WebSocket })) {
    seen.push(`${ev.item?.title ?? "-"}:${ev.unread}`);
    if (ev.item) break;
  }
  assert.deepEqual(seen, ["-:0", "Hi:1"]);
  assert.equal(refreshes, 8);
  assert.deepEqual(inits.at(-1), { token: "access.9.sig" });
});
