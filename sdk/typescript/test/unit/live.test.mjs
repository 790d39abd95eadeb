// Following a job over SSE against an in-process server: a stream that
// ends early is resumed with Last-Event-ID, an expired token mid-stream is
// refreshed before resuming, and the iteration ends at the final state.
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { HeraldClient } from "../../dist/index.js";
import { faultServer, ok } from "./fault-server.mjs";

let srv;
afterEach(async () => {
  await srv?.close();
  srv = undefined;
});

const job = (status, sent, version) => ({ id: "j1", status, subject: "s", totalRecipients: 3, sent, failed: 0, invalidTokens: 0, v: version });
const event = (j, id) => `event: progress\nid: ${id}\ndata: ${JSON.stringify(j)}\n\n`;

test("SSE: resumed with Last-Event-ID after an early end and after TOKEN_EXPIRED, to the final state", async () => {
  let refreshes = 0;
  srv = await faultServer((r, n, res) => {
    if (r.url === "/api/v1/auth/refresh") {
      refreshes++;
      return ok({ token: "access.2.sig", refreshToken: "refresh-2", tokenType: "Bearer", expiresIn: 900 });
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (n === 1) {
      assert.equal(r.headers["last-event-id"], undefined);
      res.end(": keep-alive\n\n" + event(job("running", 0, 1), "1") + event(job("running", 1, 5), "5")); // ends early
    } else if (n === 2) {
      assert.equal(r.headers["last-event-id"], "5");
      res.end(event(job("running", 2, 9), "9") + `event: error\ndata: ${JSON.stringify({ code: "TOKEN_EXPIRED", message: "expired", details: { expiredAt: "2026-01-01T00:00:00Z", tokenType: "access" } })}\n\n`);
    } else {
      assert.equal(r.headers["last-event-id"], "9");
      assert.equal(r.headers.authorization, "Bearer access.2.sig");
      res.end(event(job("completed", 3, 14), "14") + event(job("completed", 3, 14), "15"));
    }
    return undefined;
  });
  const c = new HeraldClient({ baseUrl: srv.url });
  await c.setSession({ token: "access.1.sig", refreshToken: "refresh-1", expiresIn: 900 });
  const seen = [];
  for await (const p of c.notifications.follow("j1", { transport: "sse" })) seen.push(`${p.status}:${p.sent}`);
  assert.deepEqual(seen, ["running:0", "running:1", "running:2", "completed:3"], "stops at the final state");
  assert.equal(refreshes, 1);
  assert.equal(srv.requests.filter((r) => r.url.endsWith("/events")).length, 3);
});

test("SSE: a finished job whose final event the client has answers 204 and the iteration ends", async () => {
  srv = await faultServer(() => ({ status: 204 }));
  const c = new HeraldClient({ baseUrl: srv.url, apiKey: "hk_x" });
  const seen = [];
  for await (const p of c.notifications.follow("j1", { transport: "sse" })) seen.push(p);
  assert.deepEqual(seen, []);
  assert.equal(srv.requests[0].headers.authorization, "Bearer hk_x");
});

test("inbox over SSE: the user's token on /users/me/inbox/events, `inbox` events, reconnected (counts again) after an early end, until the loop breaks", async () => {
  const counts = (unread) => `event: inbox\ndata: ${JSON.stringify({ item: null, unseen: unread, unread })}\n\n`;
  srv = await faultServer((r, n, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (n === 1) res.end(counts(0) + `event: inbox\ndata: ${JSON.stringify({ item: { id: "i1", title: "Hi" }, unseen: 1, unread: 1 })}\n\n`);
    else res.end(counts(1) + counts(0));
    return undefined;
  });
  const c = new HeraldClient({ baseUrl: srv.url });
  await c.setSession({ token: "access.1.sig", refreshToken: "refresh-1", expiresIn: 900 });
  const seen = [];
  for await (const ev of c.inbox.follow({ transport: "sse" })) {
    seen.push(`${ev.item?.title ?? "-"}:${ev.unread}`);
    if (seen.length === 4) break;
  }
  assert.deepEqual(seen, ["-:0", "Hi:1", "-:1", "-:0"]);
  assert.deepEqual(srv.requests.map((r) => r.url), ["/api/v1/users/me/inbox/events", "/api/v1/users/me/inbox/events"]);
  for (const r of srv.requests) {
    assert.equal(r.headers.authorization, "Bearer access.1.sig");
    assert.equal(r.headers["last-event-id"], undefined);
  }
});
