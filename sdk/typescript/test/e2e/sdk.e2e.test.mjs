// The SDK against the real Herald binary, run by test/clients
// (TestTypeScriptSDK), which starts the server on SQLite with a fake FCM,
// an SMTP fake and a fake Telegram, serves each emailed code at
// HERALD_CODE_URL, and at HERALD_TELEGRAM_CONTROL_URL lets the test type
// into a Telegram chat and read what the fake was sent.
// Every step goes through the SDK and Node's own fetch.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import http from "node:http";
import { test } from "node:test";
import WebSocket from "ws";
import { HeraldClient, HeraldError, MemoryStorage, verifyWebhook } from "../../dist/index.js";

const baseUrl = process.env.HERALD_URL;
const codeUrl = process.env.HERALD_CODE_URL;
const adminEmail = process.env.HERALD_ADMIN_EMAIL;
const password = process.env.HERALD_PASSWORD;
const telegramUrl = process.env.HERALD_TELEGRAM_CONTROL_URL;
const ttl = Number(process.env.HERALD_ACCESS_TOKEN_TTL_SECONDS ?? "2");
if (!baseUrl || !codeUrl || !adminEmail || !password || !telegramUrl) {
  throw new Error("run by test/clients TestTypeScriptSDK: HERALD_URL, HERALD_CODE_URL, HERALD_TELEGRAM_CONTROL_URL, HERALD_ADMIN_EMAIL and HERALD_PASSWORD are not set");
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

// RFC 6238 with the server's parameters (SHA-1, 6 digits, 30 s), for the
// 30-second step `step` steps from now.
function totp(base32Secret, step = 0) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const ch of base32Secret.replace(/=+$/, "").toUpperCase()) bits += alphabet.indexOf(ch).toString(2).padStart(5, "0");
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30_000) + step));
  const mac = createHmac("sha1", key).update(counter).digest();
  const o = mac[mac.length - 1] & 0xf;
  return String((mac.readUInt32BE(o) & 0x7fffffff) % 1_000_000).padStart(6, "0");
}

// Waits, at most `ms`, for check() to answer something truthy.
async function eventually(check, what, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got) return got;
    assert.ok(Date.now() < deadline, `${what} within ${ms} ms`);
    await sleep(100);
  }
}

// The events of a live iterator until one satisfies pred, failing after ms.
async function until(iter, pred, what, ms = 20_000) {
  const seen = [];
  const deadline = Date.now() + ms;
  for (;;) {
    let timer;
    const timeout = new Promise((ok) => (timer = setTimeout(() => ok({ timedOut: true }), deadline - Date.now())));
    const r = await Promise.race([iter.next(), timeout]).finally(() => clearTimeout(timer));
    assert.ok(!r.timedOut, `${what}: nothing matching within ${ms} ms; saw ${JSON.stringify(seen)}`);
    assert.ok(!r.done, `${what}: the stream ended; saw ${JSON.stringify(seen)}`);
    seen.push(r.value);
    if (pred(r.value)) return r.value;
  }
}

// Signs a new account up through the SDK and verifies it with the emailed code.
async function newVerifiedAccount(client, address) {
  await client.auth.signup({ email: address, password });
  await client.auth.verifyEmail({ email: address, code: await emailedCode(address) });
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
  const created = await admin.apiKeys.create({ name: "sdk e2e", scopes: ["accounts:read", "notifications:send", "messenger:send", "webhooks:manage"] });
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

test("a TOTP second factor: enrol and confirm through the SDK, then a login that needs it", async () => {
  const address = "sdk-totp@example.com";
  const c = new HeraldClient({ baseUrl });
  await newVerifiedAccount(c, address);
  assert.equal((await c.auth.login({ email: address, password })).status, "signedIn");
  const enrolment = await c.users.enrollTotp();
  assert.match(enrolment.uri, /^otpauth:\/\/totp\//);
  const events = [];
  c.onAuthStateChange((e) => events.push(e));
  const before = (await c.getSession()).accessToken;
  const confirmed = await c.users.confirmTotp(enrolment.factor.id, { code: totp(enrolment.secret) });
  assert.equal(confirmed.recoveryCodes.length, 10);
  assert.notEqual((await c.getSession()).accessToken, before, "the confirmation's aal2 tokens are the session now");
  assert.deepEqual(events, ["TOKEN_REFRESHED"]);
  await c.auth.logout();

  const step = await c.auth.login({ email: address, password });
  assert.equal(step.status, "mfaRequired", JSON.stringify(step));
  assert.ok(step.factors.includes("totp"), JSON.stringify(step.factors));
  assert.equal(await c.getSession(), null, "no session before the second step");
  const wrong = await c.auth.completeMfaLogin({ challengeToken: step.challengeToken, code: "000000" }).catch((e) => e);
  assert.ok(wrong instanceof HeraldError, String(wrong));
  assert.equal(wrong.code, "MFA_CODE_INVALID");
  assert.equal(typeof wrong.details.attemptsLeft, "number");
  // The confirmation used this step's code, and a code works once: the
  // next step's (accepted for clock drift) completes the login.
  const code = totp(enrolment.secret, 1);
  await c.auth.completeMfaLogin({ challengeToken: step.challengeToken, code });
  assert.equal((await c.users.me()).email, address);
  const again = await c.auth.login({ email: address, password });
  const reused = await c.auth.completeMfaLogin({ challengeToken: again.challengeToken, code }).catch((e) => e);
  assert.equal(reused.code, "MFA_CODE_REUSED");
});

test("the messenger: a chat linked through the SDK's link, then the key's client lists, previews, sends and broadcasts; the fake Telegram got them", async () => {
  const chat = "7700123";
  const sentTo = async () => (await (await fetch(`${telegramUrl}/telegram/sent?chat=${chat}`)).json()).map((m) => m.visible);
  const type = async (text) => {
    const res = await fetch(`${telegramUrl}/telegram/text?chat=${chat}&text=${encodeURIComponent(text)}`, { method: "POST" });
    assert.equal(res.status, 204);
  };

  const link = await user.users.messengerLink();
  const url = new URL(link.url);
  assert.equal(url.origin + url.pathname, "https://t.me/herald_test_bot");
  assert.ok(Date.parse(link.expiresAt) > Date.now());
  await type(`/start ${url.searchParams.get("start")}`);
  const server = state.server;
  const linked = await eventually(async () => {
    const page = await server.messenger.subscribers();
    return page.nodes.find((n) => n.chatId === chat && n.userId === state.userId);
  }, "the chat subscribed and linked to the user");
  assert.equal(linked.status, "subscribed");
  assert.equal(linked.startPayload, null, "a link token is not kept as the payload");

  const preview = await server.messenger.preview({ message: "**Price:** 4.99 (50% off!)" });
  assert.equal(preview.html, "<b>Price:</b> 4.99 (50% off!)");
  const bad = await server.messenger.send({ chatId: chat, message: "" }).catch((e) => e);
  assert.equal(bad.code, "INVALID_MESSAGE");
  assert.equal(bad.status, 400);

  const sent = await server.messenger.send({ chatId: chat, message: "**Hello** from the SDK" });
  assert.ok(sent, "the send answered");
  await eventually(async () => (await sentTo()).includes("Hello from the SDK"), "the message at the fake Telegram");

  // A send to the user on the telegram channel reaches the linked chat.
  await server.notifications.sendToUser(state.userId, { notification: { subject: "Linked", content: "through the link" }, channels: ["telegram"] });
  await eventually(async () => (await sentTo()).some((v) => v.includes("through the link")), "the user's send at the linked chat");

  const job = await server.messenger.broadcast({ message: "A broadcast from the SDK" });
  assert.ok(job.totalRecipients >= 1, JSON.stringify(job));
  const done = await eventually(async () => {
    const j = await server.messenger.broadcastStatus(job.id);
    return ["completed", "failed", "cancelled"].includes(j.status) && j;
  }, "the messenger broadcast to end", 30_000);
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.equal(done.sent, done.totalRecipients);
  assert.ok((await sentTo()).includes("A broadcast from the SDK"));
  assert.equal((await server.messenger.cancelBroadcast(job.id)).status, "completed", "a finished job is answered as it is");
  const unknown = await server.messenger.broadcastStatus("00000000-0000-4000-8000-000000000000").catch((e) => e);
  assert.equal(unknown.code, "JOB_NOT_FOUND");

  assert.deepEqual(await user.users.unlinkMessenger(), { unlinked: true });
  const after = (await server.messenger.subscribers()).nodes.find((n) => n.chatId === chat);
  assert.equal(after.userId, null, "unlinked");
  assert.equal(after.status, "subscribed", "unlinking leaves the chat subscribed");
  const refused = await user.messenger.subscribers().catch((e) => e);
  assert.equal(refused.code, "INSUFFICIENT_PERMISSIONS", "a user's token is not the messenger's");
});

test("live progress with a user's own token: its inbox over graphql-ws and SSE; a broadcast's progress refused", async () => {
  for (const transport of ["ws", "sse"]) {
    const ac = new AbortController();
    const live = user.inbox.follow({ transport, WebSocket, signal: ac.signal });
    try {
      const first = await until(live, () => true, `${transport}: the counts first`);
      assert.equal(first.item, null, transport);
      const subject = `Inbox ${transport}`;
      await state.server.notifications.sendToUser(state.userId, { notification: { subject, content: "kept" }, channels: ["push"], inbox: true });
      const kept = await until(live, (ev) => ev.item?.title === subject, `${transport}: the kept item`);
      assert.equal(kept.item.body, "kept", transport);
      assert.equal(kept.unread, first.unread + 1, transport);
      await user.inbox.markRead(kept.item.id);
      await until(live, (ev) => ev.item === null && ev.unread === kept.unread - 1, `${transport}: the counts after a read`);
    } finally {
      ac.abort();
      await live.return();
    }
  }
  assert.ok((await user.inbox.list()).nodes.some((i) => i.title === "Inbox sse"));

  // A user's token may not follow a broadcast: the documented code, both ways.
  const job = await state.server.notifications.broadcast({ notification: { subject: "Not the user's", content: "refused" } });
  for (const transport of ["ws", "sse"]) {
    const refused = await (async () => {
      for await (const _ of user.notifications.follow(job.jobId, { transport, WebSocket, signal: AbortSignal.timeout(20_000) }));
    })().catch((e) => e);
    assert.ok(refused instanceof HeraldError, `${transport}: ${refused}`);
    assert.equal(refused.code, "INSUFFICIENT_PERMISSIONS", transport);
    assert.equal(refused.status, 403, transport);
  }
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
