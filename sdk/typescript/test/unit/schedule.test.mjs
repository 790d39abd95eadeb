// The retry schedule against an in-process fault server, with mocked
// timers: each wait is exactly min(1 s × 2^(attempt−1), 32 s) + jitter, a
// Retry-After comes first, retries stop after 5, and only retryable
// answers of retryable requests are retried.
import assert from "node:assert/strict";
import { afterEach, describe, mock, test } from "node:test";
import { HeraldClient, HeraldError, retryDelay, resolveRetry } from "../../dist/index.js";
import { faultServer, fail, httpFetch, ok, settle } from "./fault-server.mjs";

let srv;
afterEach(async () => {
  mock.timers.reset();
  await srv?.close();
  srv = undefined;
});

/** A random() that returns the given values in turn (then the last). */
function seq(...values) {
  let i = 0;
  const used = [];
  const f = () => {
    const v = values[Math.min(i++, values.length - 1)];
    used.push(v);
    return v;
  };
  f.used = used;
  return f;
}

/**
 * Asserts that after request n arrived, request n+1 comes exactly `wait` ms
 * later: not at wait−1, at wait.
 */
async function expectNextAfter(n, wait) {
  await srv.waitFor(n);
  await settle();
  mock.timers.tick(wait - 1);
  await settle();
  assert.equal(srv.requests.length, n, `request ${n + 1} came before ${wait} ms`);
  mock.timers.tick(1);
  await srv.waitFor(n + 1);
}

test("the retry delays are 1, 2, 4, 8, 16 s (then capped at 32 s) plus jitter in [0, 500) ms", () => {
  const r = resolveRetry({ random: Math.random });
  for (const [attempt, base] of [[1, 1000], [2, 2000], [3, 4000], [4, 8000], [5, 16000], [6, 32000], [7, 32000]]) {
    for (let i = 0; i < 200; i++) {
      const d = retryDelay(attempt, r);
      assert.ok(d >= base && d < base + 500, `attempt ${attempt}: ${d} not in [${base}, ${base + 500})`);
    }
  }
  assert.equal(retryDelay(3, resolveRetry({ random: () => 0 })), 4000);
  assert.equal(retryDelay(3, resolveRetry({ random: () => 0.9999 })), 4499);
  assert.equal(retryDelay(1, resolveRetry({ random: () => 0 }), 7), 7000, "Retry-After replaces the schedule");
});

test("503 five times then success: waits 1, 2, 4, 8, 16 s plus the drawn jitter", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  srv = await faultServer((_r, n) => (n <= 5 ? fail(503, "SERVICE_UNAVAILABLE") : ok({ id: "u1" })));
  const random = seq(0.1, 0.5, 0.9, 0, 0.9999);
  const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, retry: { random } });
  const p = c.request({ method: "GET", path: "/api/v1/users/me", auth: "none" });
  await expectNextAfter(1, 1000 + 50);
  await expectNextAfter(2, 2000 + 250);
  await expectNextAfter(3, 4000 + 450);
  await expectNextAfter(4, 8000 + 0);
  await expectNextAfter(5, 16000 + 499);
  const res = await p;
  assert.deepEqual(res.data, { id: "u1" });
  assert.equal(res.retries, 5);
  assert.equal(srv.requests.length, 6);
});

test("stops after 5 retries and throws the last error", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  srv = await faultServer((_r, n) => fail(500, "INTERNAL_ERROR", undefined, { "x-request-id": `req-${n}` }));
  const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, retry: { random: () => 0 } });
  const p = c.request({ method: "GET", path: "/api/v1/devices", auth: "none" });
  const settled = p.then(() => "resolved", (e) => e);
  for (const [n, wait] of [[1, 1000], [2, 2000], [3, 4000], [4, 8000], [5, 16000]]) await expectNextAfter(n, wait);
  const err = await settled;
  assert.ok(err instanceof HeraldError, String(err));
  assert.equal(err.code, "INTERNAL_ERROR");
  assert.equal(err.status, 500);
  assert.equal(err.requestId, "req-6");
  mock.timers.tick(120_000);
  await settle();
  assert.equal(srv.requests.length, 6, "no seventh request");
});

test("Retry-After comes first: 429 with Retry-After: 7 waits 7 s, the next 503 waits 2 s", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  srv = await faultServer((_r, n) =>
    n === 1
      ? fail(429, "RATE_LIMITED", { limit: 10, window: "60s", tier: "auth", retryAfter: 7 }, { "retry-after": "7" })
      : n === 2
        ? fail(503, "SERVICE_UNAVAILABLE")
        : ok(true),
  );
  const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, retry: { random: () => 0.25 } });
  const p = c.request({ method: "GET", path: "/x", auth: "none" });
  await expectNextAfter(1, 7000 + 125);
  await expectNextAfter(2, 2000 + 125);
  assert.equal((await p).data, true);
});

test("details.retryAfter is used when the Retry-After header is missing", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  srv = await faultServer((_r, n) => (n === 1 ? fail(503, "SERVICE_UNAVAILABLE", { retryAfter: 3 }) : ok(1)));
  const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, retry: { random: () => 0 } });
  const p = c.request({ method: "GET", path: "/x", auth: "none" });
  await expectNextAfter(1, 3000);
  assert.equal((await p).data, 1);
});

describe("not retried", () => {
  for (const [status, code] of [
    [400, "VALIDATION_ERROR"],
    [401, "TOKEN_INVALID"],
    [401, "AUTH_REQUIRED"],
    [403, "INSUFFICIENT_PERMISSIONS"],
    [404, "DEVICE_NOT_FOUND"],
    [409, "DEVICE_LIMIT_REACHED"],
    [422, "WEAK_PASSWORD"],
  ]) {
    test(`${status} ${code}`, async () => {
      mock.timers.enable({ apis: ["setTimeout"] });
      srv = await faultServer(() => fail(status, code));
      const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url });
      await c.setSession({ token: "a.b.c", refreshToken: "r", expiresIn: 3600 });
      const p = c.request({ method: "GET", path: "/api/v1/devices" }).then(() => "resolved", (e) => e);
      await srv.waitFor(1);
      mock.timers.tick(120_000);
      await settle();
      const err = await p;
      assert.ok(err instanceof HeraldError);
      assert.equal(err.code, code);
      assert.equal(err.status, status);
      assert.equal(srv.requests.length, 1);
      assert.equal(c.refreshCount, 0);
    });
  }
});

test("a POST without an Idempotency-Key is not retried; with one it is, with the same key", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  srv = await faultServer((r) => (r.headers["idempotency-key"] && srv.requests.length >= 3 ? ok({ jobId: "j" }) : fail(503, "SERVICE_UNAVAILABLE")));
  const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, apiKey: "hk_test", retry: { random: () => 0 } });
  const plain = c.request({ method: "POST", path: "/api/v1/messenger/messages", body: { chatId: "1", message: "m" } }).then(() => "resolved", (e) => e);
  await srv.waitFor(1);
  mock.timers.tick(60_000);
  await settle();
  const err = await plain;
  assert.equal(err.code, "SERVICE_UNAVAILABLE");
  assert.equal(srv.requests.length, 1, "the POST was retried");
  assert.equal(srv.requests[0].headers["idempotency-key"], undefined);

  // The SDK's sends add a key, and keep it across retries.
  const sent = c.notifications.broadcast({ notification: { subject: "s", content: "c" } });
  await expectNextAfter(2, 1000);
  assert.deepEqual(await sent, { jobId: "j" });
  const keys = srv.requests.slice(1).map((r) => r.headers["idempotency-key"]);
  assert.equal(keys.length, 2);
  assert.match(keys[0], /^[0-9a-f-]{36}$/);
  assert.equal(keys[0], keys[1]);
});

test("network errors are retried", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  srv = await faultServer((_r, n) => (n === 1 ? "destroy" : ok("back")));
  const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, retry: { random: () => 0 } });
  const p = c.request({ method: "GET", path: "/x", auth: "none" });
  await expectNextAfter(1, 1000);
  assert.equal((await p).data, "back");
});

test("retry: false and maxRetries 2 are obeyed", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  srv = await faultServer(() => fail(502, "UPSTREAM_ERROR"));
  const off = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, retry: false });
  await assert.rejects(off.request({ method: "GET", path: "/x", auth: "none" }), { code: "UPSTREAM_ERROR" });
  assert.equal(srv.requests.length, 1);
  const two = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, retry: { maxRetries: 2, baseDelayMs: 100, random: () => 0 } });
  const p = two.request({ method: "GET", path: "/x", auth: "none" }).then(() => "resolved", (e) => e);
  // (request 1 was the first client's)
  await expectNextAfter(2, 100);
  await expectNextAfter(3, 200);
  mock.timers.tick(60_000);
  await settle();
  assert.equal((await p).code, "UPSTREAM_ERROR");
  assert.equal(srv.requests.length, 4);
});

test("an abort during a wait rejects at once with ABORTED and sends nothing more", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  srv = await faultServer(() => fail(503, "SERVICE_UNAVAILABLE"));
  const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url, retry: { random: () => 0 } });
  const ac = new AbortController();
  const p = c.request({ method: "GET", path: "/x", auth: "none", signal: ac.signal }).then(() => "resolved", (e) => e);
  await expectNextAfter(1, 1000);
  ac.abort();
  const err = await p;
  assert.ok(err instanceof HeraldError);
  assert.equal(err.code, "ABORTED");
  mock.timers.tick(120_000);
  await settle();
  assert.equal(srv.requests.length, 2);
  // Already aborted: nothing is sent.
  await assert.rejects(c.request({ method: "GET", path: "/x", auth: "none", signal: AbortSignal.abort() }), { code: "ABORTED" });
  assert.equal(srv.requests.length, 2);
});

test("an abort while the request is in flight rejects with ABORTED", async () => {
  srv = await faultServer(() => undefined); // never answers
  const c = new HeraldClient({ fetch: httpFetch, baseUrl: srv.url });
  const ac = new AbortController();
  const p = c.request({ method: "GET", path: "/x", auth: "none", signal: ac.signal });
  await srv.waitFor(1);
  ac.abort();
  await assert.rejects(p, { code: "ABORTED" });
});
