// The SDK against the real Herald binary, run by test/clients
// (TestTypeScriptSDK), which starts the server on SQLite with a fake FCM
// and an SMTP fake, and serves each emailed code at HERALD_CODE_URL.
// Every step goes through the SDK and Node's own fetch.
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import WebSocket from "ws";
import { HeraldClient, HeraldError, MemoryStorage, verifyWebhook } from "../../dist/index.js";

const baseUrl = process.env.HERALD_URL;
const codeUrl = process.env.HERALD_CODE_URL;
const adminEmail = process.env.HERALD_ADMIN_EMAIL;
const password = process.env.HERALD_PASSWORD;
const ttl = Number(process.env.HERALD_ACCESS_TOKEN_TTL_SECONDS ?? "2");
if (!baseUrl || !codeUrl || !adminEmail || !password) {
  throw new Error("run by test/clients TestTypeScriptSDK: HERALD_URL, HERALD_CODE_URL, HERALD_ADMIN_EMAIL and HERALD_PASSWORD are not set");
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function emailedCode(email) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await fetch(`${codeUrl}?email=${encodeURIComponent(email)}`);
    if (res.ok) return (await res.text()).trim();
    assert.ok(Date.now() < deadline, `no code emailed to ${email}`);
    await sleep(100);
  }
}

const email = "sdk-user@example.com";
const user = new HeraldClient({ baseUrl, storage: new MemoryStorage() });
const admin = new HeraldClient({ baseUrl });
const state = {};

test("signup, a refused weak password, verify with the emailed code, resend refused once verified", async () => {
  const weak = await user.auth.signup({ email: "weak@example.com", password: "short" }).catch((e) => e);
  assert.ok(weak instanceof HeraldError, String(weak));
  assert.equal(weak.code, "WEAK_PASSWORD");
  assert.equal(weak.status, 422);
  assert.ok(Array.isArray(weak.details.requirements) && weak.details.requirements.length > 0);
  assert.ok(Array.isArray(weak.details.failedChecks) && weak.details.failedChecks.length > 0);
  assert.match(weak.requestId ?? "", /.+/);

  const reg = await user.auth.signup({ email, password });
  assert.equal(typeof reg, "object");
  const dup = await user.auth.signup({ email, password }).catch((e) => e);
  assert.equal(dup.code, "EMAIL_ALREADY_EXISTS");
  assert.equal(dup.status, 409);

  const unverified = await user.auth.login({ email, password }).catch((e) => e);
  assert.equal(unverified.code, "EMAIL_NOT_VERIFIED");

  await user.auth.verifyEmail({ email, code: await emailedCode(email) });
  const again = await user.auth.resendVerification({ email }).catch((e) => e);
  assert.equal(again.code, "ALREADY_VERIFIED");
  assert.equal(again.status, 400);
});

test("login, the current user, rate-limit headers, then a refresh when the access token expires", async () => {
  const bad = await user.auth.login({ email, password: "Wrong-pass1" }).catch((e) => e);
  assert.equal(bad.code, "INVALID_CREDENTIALS");
  assert.equal(bad.status, 401);

  const events = [];
  user.onAuthStateChange((e) => events.push(e));
  const r = await user.auth.login({ email, password });
  assert.equal(r.status, "signedIn");
  const me = await user.users.me();
  assert.equal(me.email, email);
  state.userId = me.id;
  assert.ok(user.lastRateLimit && user.lastRateLimit.limit > 0, `X-RateLimit-* exposed: ${JSON.stringify(user.lastRateLimit)}`);

  // The server runs with a short access-token lifetime: wait it out.
  const first = (await user.getSession()).accessToken;
  await sleep(ttl * 1000 + 1500);
  const before = user.refreshCount;
  assert.equal((await user.users.me()).id, me.id);
  assert.equal(user.refreshCount, before + 1, "TOKEN_EXPIRED led to one refresh");
  assert.notEqual((await user.getSession()).accessToken, first);
  assert.deepEqual(events, ["SIGNED_IN", "TOKEN_REFRESHED"]);

  // Explicit refresh, shared by parallel callers.
  const [a, b] = await Promise.all([user.auth.refresh(), user.auth.refresh()]);
  assert.equal(a, b);
  assert.equal(user.refreshCount, before + 2);

  // Two tabs (two clients with copies of one stored session) refreshing at
  // once both survive, by the server's reuse grace, without locks.
  const shared = await user.getSession();
  const tabs = [0, 1].map(() => new HeraldClient({ baseUrl, storage: new MemoryStorage() }));
  for (const t of tabs) await t.setSession({ token: shared.accessToken, refreshToken: shared.refreshToken, expiresIn: 60 });
  const both = await Promise.all(tabs.map((t) => t.auth.refresh()));
  assert.notEqual(both[0].refreshToken, both[1].refreshToken, "each tab has its own new refresh token");
  for (const t of tabs) assert.equal((await t.users.me()).id, me.id);

  // GraphQL with the same session.
  const gq = await user.graphql("{ me { email } }");
  assert.equal(gq.me.email, email);
});

test("devices: register, list, update the push token, and a typed 404", async () => {
  const d = await user.devices.register({ platform: "android", pushToken: "sdk-token-1", name: "SDK phone" });
  assert.match(d.deviceId, /^[0-9a-f-]{36}$/);
  state.deviceId = d.deviceId;
  const list = await user.devices.list();
  assert.deepEqual(list.map((x) => x.deviceId), [d.deviceId]);
  const moved = await user.devices.updatePushToken(d.deviceId, { pushToken: "sdk-token-2" });
  assert.equal(moved.pushToken, "sdk-token-2");
  const missing = await user.devices.remove("00000000-0000-4000-8000-000000000000").catch((e) => e);
  assert.equal(missing.code, "DEVICE_NOT_FOUND");
  assert.equal(missing.status, 404);
});

test("an admin creates an API key; the key's client uses the admin API and sends", async () => {
  const r = await admin.auth.login({ email: adminEmail, password });
  assert.equal(r.status, "signedIn");
  const created = await admin.apiKeys.create({ name: "sdk e2e", scopes: ["accounts:read", "notifications:send", "webhooks:manage"] });
  assert.match(created.key, /^hk_/);
  assert.ok((await admin.apiKeys.list()).some((k) => k.id === created.apiKey.id));

  const server = new HeraldClient({ baseUrl, apiKey: created.key });
  const page = await server.admin.listUsers({ email });
  assert.deepEqual(page.nodes.map((u) => u.email), [email]);
  assert.equal((await server.admin.getUser(state.userId)).deviceCount, 1);

  const denied = await server.apiKeys.list().catch((e) => e);
  assert.equal(denied.code, "INSUFFICIENT_PERMISSIONS");
  assert.equal(denied.status, 403);

  const sent = await server.notifications.sendToDevice(state.deviceId, { notification: { subject: "Hi", content: "from the SDK" } });
  assert.equal(sent.status, "sent");
  const toUser = await server.notifications.sendToUser(state.userId, { notification: { subject: "Hi", content: "to the user" } });
  assert.ok(toUser, "a send to the user answered");

  const job = await server.notifications.broadcast({ notification: { subject: "All", content: "broadcast" } });
  assert.equal(job.totalRecipients, 1);
  const deadline = Date.now() + 30_000;
  let status;
  for (;;) {
    status = await server.notifications.job(job.jobId);
    if (status.status === "completed" || status.status === "failed") break;
    assert.ok(Date.now() < deadline, `the broadcast did not end: ${JSON.stringify(status)}`);
    await sleep(100);
  }
  assert.equal(status.status, "completed");
  assert.equal(status.sent, 1);

  const unknown = await server.notifications.job("00000000-0000-4000-8000-000000000000").catch((e) => e);
  assert.equal(unknown.code, "JOB_NOT_FOUND");
  state.server = server;
});

test("a webhook ping verified with verifyWebhook, and a tampered body refused", async () => {
  const received = [];
  const waiting = [];
  const receiver = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
      while (waiting.length) waiting.shift()();
    });
  });
  await new Promise((ok) => receiver.listen(0, "127.0.0.1", ok));
  try {
    const url = `http://127.0.0.1:${receiver.address().port}/hook`;
    const hook = await state.server.webhooks.create({ url, eventTypes: ["user.created"], description: "sdk e2e" });
    const { eventId } = await state.server.webhooks.ping(hook.endpoint.id);
    const deadline = Date.now() + 20_000;
    let got;
    while (!(got = received.find((d) => d.headers["webhook-id"] === eventId))) {
      assert.ok(Date.now() < deadline, "the ping never arrived");
      await new Promise((ok) => { waiting.push(ok); setTimeout(ok, 100); });
    }
    const event = verifyWebhook(got.body, got.headers, hook.secret);
    assert.equal(event.type, "webhook.ping");
    assert.equal(event.data.endpointId, hook.endpoint.id);
    assert.throws(() => verifyWebhook(got.body.replace("ping", "pong"), got.headers, hook.secret));
  } finally {
    receiver.closeAllConnections();
    await new Promise((ok) => receiver.close(ok));
  }
});

test("a broadcast followed live to its end, over graphql-ws and then over SSE", async () => {
  for (const transport of ["ws", "sse"]) {
    const job = await state.server.notifications.broadcast({ notification: { subject: `Live ${transport}`, content: "followed" } });
    const seen = [];
    for await (const p of state.server.notifications.follow(job.jobId, { transport, WebSocket })) seen.push(p);
    assert.ok(seen.length >= 1, transport);
    const last = seen.at(-1);
    assert.equal(last.id, job.jobId, transport);
    assert.equal(last.status, "completed", `${transport}: ${JSON.stringify(seen)}`);
    assert.equal(last.sent, 1, transport);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].sent >= seen[i - 1].sent, `${transport}: counters go forward`);
  }
  const missing = await (async () => {
    for await (const _ of state.server.notifications.follow("00000000-0000-4000-8000-000000000000", { transport: "sse" }));
  })().catch((e) => e);
  assert.equal(missing.code, "JOB_NOT_FOUND");
});

test("logout: the session ends at the server, and the client is signed out", async () => {
  const token = (await user.getSession()).accessToken;
  const events = [];
  user.onAuthStateChange((e) => events.push(e));
  await user.auth.logout();
  assert.equal(await user.getSession(), null);
  assert.deepEqual(events, ["SIGNED_OUT"]);
  const res = await fetch(`${baseUrl}/api/v1/users/me`, { headers: { authorization: `Bearer ${token}` } });
  const body = await res.json();
  assert.equal(res.status, 401);
  assert.ok(["TOKEN_INVALID", "TOKEN_EXPIRED"].includes(body.error.code), JSON.stringify(body));
  const after = await user.users.me().catch((e) => e);
  assert.equal(after.code, "AUTH_REQUIRED");
});
