// Sessions against an in-process fault server: one refresh for many calls
// meeting TOKEN_EXPIRED, each retried once; a refused refresh signs the
// client out; a cooldown after a failed refresh; storage adapters; login's
// second-factor step; rate-limit headers; GraphQL errors.
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { Webhook } from "standardwebhooks";
import {
  HeraldClient,
  HeraldError,
  MemoryStorage,
  asyncStorageAdapter,
  isRetryable,
  localStorageAdapter,
  verifyWebhook,
  WebhookVerificationError,
} from "../../dist/index.js";
import { faultServer, fail, httpFetch, ok } from "./fault-server.mjs";

let srv;
afterEach(async () => {
  await srv?.close();
  srv = undefined;
});

const expired = () => fail(401, "TOKEN_EXPIRED", { expiredAt: "2026-01-01T00:00:00Z", tokenType: "access" });
const tokens = (n) => ({ token: `access.${n}.sig`, refreshToken: `refresh-${n}`, tokenType: "Bearer", expiresIn: 900 });

/** A server whose access token n is valid while the refresh counter is n. */
async function rotatingServer({ refreshAnswer, refreshDelayMs = 50, start = 0 } = {}) {
  let current = start;
  const counts = { refresh: 0, me: 0 };
  srv = await faultServer(async (r) => {
    if (r.url === "/api/v1/auth/refresh") {
      counts.refresh++;
      await new Promise((ok) => setTimeout(ok, refreshDelayMs)); // let every caller meet the expiry first
      if (refreshAnswer) return refreshAnswer(r);
      if (r.json.refreshToken !== `refresh-${current}`) return fail(401, "TOKEN_INVALID");
      current++;
      return ok(tokens(current));
    }
    if (r.url === "/api/v1/users/me") {
      counts.me++;
      if (r.headers.authorization !== `Bearer access.${current}.sig`) return expired();
      return ok({ id: "u1", email: "a@b.test" }, { "x-ratelimit-limit": "300", "x-ratelimit-remaining": "299", "x-ratelimit-reset": "1790000000" });
    }
    return fail(404, "NOT_FOUND");
  });
  return counts;
}

test("20 parallel calls meeting TOKEN_EXPIRED share one refresh, and each is retried once", async () => {
  // The server is at token 1: this client's access token 0 has expired.
  const counts = await rotatingServer({ start: 1 });
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch });
  await c.setSession({ ...tokens(0), refreshToken: "refresh-1" });
  const events = [];
  c.onAuthStateChange((e, s) => events.push([e, s?.accessToken]));

  const results = await Promise.all(Array.from({ length: 20 }, () => c.users.me()));
  assert.equal(counts.refresh, 1, "one refresh for 20 calls");
  assert.equal(c.refreshCount, 1);
  assert.equal(counts.me, 40, "each call sent twice: expired, then once more");
  for (const r of results) assert.deepEqual(r, { id: "u1", email: "a@b.test" });
  assert.deepEqual(events, [["TOKEN_REFRESHED", "access.2.sig"]]);
  assert.equal((await c.getSession()).refreshToken, "refresh-2");
  assert.deepEqual(c.lastRateLimit, { limit: 300, remaining: 299, reset: 1790000000 });
});

test("a call meeting TOKEN_EXPIRED twice is not refreshed twice", async () => {
  let refreshes = 0;
  srv = await faultServer((r) => {
    if (r.url === "/api/v1/auth/refresh") {
      refreshes++;
      return ok(tokens(refreshes));
    }
    return expired(); // always expired
  });
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch });
  await c.setSession(tokens(0));
  await assert.rejects(c.users.me(), (e) => e instanceof HeraldError && e.code === "TOKEN_EXPIRED" && e.details.tokenType === "access");
  assert.equal(refreshes, 1);
  assert.equal(srv.requests.length, 3, "me, refresh, me once more");
});

test("a refused refresh signs the client out, and the call fails with the refresh's error", async () => {
  const counts = await rotatingServer({ refreshAnswer: () => fail(401, "TOKEN_INVALID") });
  const storage = new MemoryStorage();
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, storage });
  await c.setSession({ ...tokens(5) });
  const events = [];
  c.onAuthStateChange((e, s) => events.push([e, s]));
  const errs = await Promise.all(Array.from({ length: 5 }, () => c.users.me().then(() => null, (e) => e)));
  for (const e of errs) {
    assert.ok(e instanceof HeraldError);
    assert.equal(e.code, "TOKEN_INVALID");
  }
  assert.equal(counts.refresh, 1);
  assert.equal(await c.getSession(), null);
  assert.equal(storage.get(), null);
  assert.deepEqual(events, [["SIGNED_OUT", null]]);
  // Signed out: the next call goes without a token and refreshes nothing.
  const before = srv.requests.length;
  await assert.rejects(c.users.me(), { code: "TOKEN_EXPIRED" });
  assert.equal(srv.requests.length, before + 1);
  assert.equal(srv.requests.at(-1).headers.authorization, undefined);
  assert.equal(counts.refresh, 1);
});

test("after a failed (transient) refresh, the cooldown fails calls at once, then a refresh is tried again", async () => {
  let answer = () => fail(503, "SERVICE_UNAVAILABLE", { retryAfter: 1 });
  const counts = await rotatingServer({ refreshAnswer: (r) => answer(r), refreshDelayMs: 0 });
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, refreshCooldownMs: 300, retry: false });
  await c.setSession({ ...tokens(9), refreshToken: "refresh-0" });
  await assert.rejects(c.users.me(), { code: "SERVICE_UNAVAILABLE" });
  assert.equal(counts.refresh, 1);
  assert.notEqual(await c.getSession(), null, "a transient failure keeps the session");
  await assert.rejects(c.users.me(), { code: "SERVICE_UNAVAILABLE" });
  assert.equal(counts.refresh, 1, "no refresh during the cooldown");
  await new Promise((r) => setTimeout(r, 350));
  answer = () => ok(tokens(0));
  assert.deepEqual(await c.users.me(), { id: "u1", email: "a@b.test" });
  assert.equal(counts.refresh, 2);
});

test("refreshBeforeExpiryMs refreshes before sending when the token is about to expire", async () => {
  const counts = await rotatingServer({ refreshDelayMs: 0 });
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, refreshBeforeExpiryMs: 60_000 });
  await c.setSession({ token: "access.0.sig", refreshToken: "refresh-0", expiresIn: 30 }); // within the margin
  assert.deepEqual(await c.users.me(), { id: "u1", email: "a@b.test" });
  assert.equal(counts.refresh, 1);
  assert.equal(counts.me, 1, "sent once, with the fresh token");
});

test("login answers mfaRequired with the challenge, and completeMfaLogin signs in", async () => {
  srv = await faultServer((r) => {
    if (r.url === "/api/v1/auth/login")
      return fail(401, "MFA_REQUIRED", { challengeToken: "mfa_x", expiresAt: "2026-11-29T12:00:00Z", factors: ["totp", "recovery"] });
    if (r.url === "/api/v1/auth/login/mfa") return r.json.code === "123456" ? ok(tokens(1)) : fail(400, "MFA_CODE_INVALID");
    return fail(404, "NOT_FOUND");
  });
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch });
  const events = [];
  c.onAuthStateChange((e) => events.push(e));
  const r = await c.auth.login({ email: "a@b.test", password: "Secret123" });
  assert.deepEqual(r, { status: "mfaRequired", challengeToken: "mfa_x", expiresAt: "2026-11-29T12:00:00Z", factors: ["totp", "recovery"] });
  assert.equal(await c.getSession(), null);
  await assert.rejects(c.auth.completeMfaLogin({ challengeToken: "mfa_x", code: "000000" }), { code: "MFA_CODE_INVALID", status: 400 });
  const s = await c.auth.completeMfaLogin({ challengeToken: "mfa_x", code: "123456" });
  assert.equal(s.accessToken, "access.1.sig");
  assert.deepEqual(events, ["SIGNED_IN"]);
});

test("logout ends the session at the server and locally", async () => {
  srv = await faultServer((r) => (r.url === "/api/v1/auth/logout" ? ok({ loggedOut: true }) : fail(404, "NOT_FOUND")));
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch });
  await c.setSession(tokens(3));
  const events = [];
  c.onAuthStateChange((e) => events.push(e));
  await c.auth.logout();
  assert.equal(srv.requests[0].headers.authorization, "Bearer access.3.sig");
  assert.equal(await c.getSession(), null);
  assert.deepEqual(events, ["SIGNED_OUT"]);
});

test("storage adapters: localStorage and an AsyncStorage-shaped store keep and restore the session", async () => {
  const map = new Map();
  const webStorage = { getItem: (k) => map.get(k) ?? null, setItem: (k, v) => map.set(k, v), removeItem: (k) => map.delete(k) };
  srv = await faultServer((r) => ok({ auth: r.headers.authorization }));
  const a = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, storage: localStorageAdapter(webStorage, "k") });
  await a.setSession(tokens(7));
  assert.equal(JSON.parse(map.get("k")).refreshToken, "refresh-7");
  const b = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, storage: localStorageAdapter(webStorage, "k") });
  assert.deepEqual(await b.users.me(), { auth: "Bearer access.7.sig" });

  const amap = new Map();
  const asyncStore = {
    getItem: async (k) => amap.get(k) ?? null,
    setItem: async (k, v) => void amap.set(k, v),
    removeItem: async (k) => void amap.delete(k),
  };
  const rn = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, storage: asyncStorageAdapter(asyncStore) });
  await rn.setSession(tokens(8));
  const rn2 = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, storage: asyncStorageAdapter(asyncStore) });
  assert.deepEqual(await rn2.users.me(), { auth: "Bearer access.8.sig" });
  await rn2.signOutLocally();
  assert.equal(amap.size, 0);
  amap.set("herald.session", "{damaged");
  assert.equal(await new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, storage: asyncStorageAdapter(asyncStore) }).getSession(), null);
});

test("GraphQL errors are HeraldErrors with the extensions as details", async () => {
  srv = await faultServer((r) => {
    if (r.json.query.includes("resend"))
      return { status: 200, body: { data: null, errors: [{ message: "slow down", path: ["resendVerificationEmail"], extensions: { code: "RATE_LIMITED", retryAfter: 60 } }] } };
    return { status: 200, body: { data: { version: "1.2.3" } } };
  });
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch, retry: false });
  assert.deepEqual(await c.graphql("{ version }"), { version: "1.2.3" });
  const err = await c.graphql('mutation { resendVerificationEmail(email: "a@b.test") }').catch((e) => e);
  assert.ok(err instanceof HeraldError);
  assert.equal(err.source, "graphql");
  assert.equal(err.code, "RATE_LIMITED");
  assert.equal(err.status, 429, "the catalogue's status of a GraphQL error answered at 200");
  assert.deepEqual(err.details, { retryAfter: 60 });
  assert.equal(err.retryAfter, 60);
  assert.equal(isRetryable(err), true);
  assert.equal(srv.requests.length, 2, "a mutation without an idempotency key is not retried");
});

test("isRetryable follows the interface's table", () => {
  const e = (code, status) => new HeraldError({ code, status, message: "m" });
  for (const [code, status] of [["RATE_LIMITED", 429], ["INTERNAL_ERROR", 500], ["UPSTREAM_ERROR", 502], ["SERVICE_UNAVAILABLE", 503], ["NETWORK_ERROR", 0]])
    assert.equal(isRetryable(e(code, status)), true, code);
  for (const [code, status] of [["VALIDATION_ERROR", 400], ["TOKEN_EXPIRED", 401], ["TOKEN_INVALID", 401], ["INSUFFICIENT_PERMISSIONS", 403], ["DEVICE_NOT_FOUND", 404], ["EMAIL_ALREADY_EXISTS", 409], ["WEAK_PASSWORD", 422], ["ABORTED", 0], ["PAYLOAD_TOO_LARGE", 413]])
    assert.equal(isRetryable(e(code, status)), false, code);
  assert.equal(isRetryable(new Error("x")), false);
});

test("verifyWebhook accepts a signed delivery, with the old or the new secret, and refuses a tampered one", () => {
  const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");
  const other = "whsec_" + Buffer.from("fedcba9876543210fedcba9876543210").toString("base64");
  const body = JSON.stringify({ type: "webhook.ping", timestamp: new Date().toISOString(), data: { endpointId: "e1" } });
  const now = new Date();
  const headers = {
    "webhook-id": "msg_1",
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign("msg_1", now, body),
  };
  assert.equal(verifyWebhook(body, headers, secret).data.endpointId, "e1");
  assert.equal(verifyWebhook(body, new Headers(headers), [other, secret]).type, "webhook.ping");
  assert.throws(() => verifyWebhook(body.replace("e1", "e2"), headers, secret), WebhookVerificationError);
  assert.throws(() => verifyWebhook(body, headers, other), WebhookVerificationError);
});

test("passkey steps: a passwordless sign-in and a login's challenge completed with a passkey sign in", async () => {
  const credential = { id: "cred", rawId: "cred", type: "public-key", response: { clientDataJSON: "x", authenticatorData: "y", signature: "z" } };
  srv = await faultServer((r) => {
    switch (r.url) {
      case "/api/v1/auth/passkey/begin":
        return ok({ challengeId: "pk1", publicKey: { challenge: "abc" } });
      case "/api/v1/auth/passkey/finish":
        assert.deepEqual(r.json, { challengeId: "pk1", credential });
        return ok(tokens(1));
      case "/api/v1/auth/login/mfa/passkey/begin":
        assert.deepEqual(r.json, { challengeToken: "mfa_x" });
        return ok({ challengeId: "pk2", publicKey: { challenge: "def" } });
      case "/api/v1/auth/login/mfa/passkey/finish":
        assert.deepEqual(r.json, { challengeToken: "mfa_x", challengeId: "pk2", credential });
        return ok(tokens(2));
    }
    return fail(404, "NOT_FOUND");
  });
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch });
  const begun = await c.auth.beginPasskeyLogin();
  assert.equal(begun.challengeId, "pk1");
  assert.equal((await c.auth.finishPasskeyLogin({ challengeId: begun.challengeId, credential })).accessToken, "access.1.sig");
  const mfa = await c.auth.beginPasskeyMfa({ challengeToken: "mfa_x" });
  const s = await c.auth.completeMfaLoginWithPasskey({ challengeToken: "mfa_x", challengeId: mfa.challengeId, credential });
  assert.equal(s.accessToken, "access.2.sig");
  assert.equal((await c.getSession()).refreshToken, "refresh-2");
  for (const r of srv.requests) assert.equal(r.headers.authorization, undefined, `${r.url} sent no token`);
});

test("confirmTotp adopts the confirmation's aal2 tokens as the session (TOKEN_REFRESHED); the next call sends them", async () => {
  srv = await faultServer((r) => {
    switch (r.url) {
      case "/api/v1/users/me/mfa/totp":
        return ok({ factor: { id: "f1" }, secret: "JBSWY3DPEHPK3PXP", uri: "otpauth://totp/x", qrCode: "data:," });
      case "/api/v1/users/me/mfa/totp/f1/confirm":
        assert.deepEqual(r.json, { code: "123456" });
        return ok({ factor: { id: "f1" }, recoveryCodes: ["a"], session: tokens(2) });
      case "/api/v1/users/me":
        return ok({ id: "u1" });
    }
    return fail(404, "NOT_FOUND");
  });
  const c = new HeraldClient({ baseUrl: srv.url, fetch: httpFetch });
  await c.setSession(tokens(1));
  const events = [];
  c.onAuthStateChange((e, s) => events.push(`${e}:${s?.accessToken}`));
  const enrolment = await c.users.enrollTotp();
  const confirmed = await c.users.confirmTotp(enrolment.factor.id, { code: "123456" });
  assert.deepEqual(confirmed.recoveryCodes, ["a"]);
  assert.deepEqual(events, ["TOKEN_REFRESHED:access.2.sig"]);
  await c.users.me();
  assert.deepEqual(srv.requests.map((r) => r.headers.authorization), ["Bearer access.1.sig", "Bearer access.1.sig", "Bearer access.2.sig"]);
});
