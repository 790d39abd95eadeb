// A browser's side of Web Push, written with independent libraries: the
// subscription's keys from Node's crypto, the push service an HTTP server
// of this script, the payload decrypted with http_ece (the reference
// implementation of RFC 8188, used by the web-push library) and the VAPID
// Authorization verified with jose. Herald registers the subscription as a
// web device, sends to the user, and this script proves that the push it
// received is readable with the subscription's private key and signed by
// the key Herald publishes.
//
// Env: HERALD_URL, USER_TOKEN (the user's access token), ADMIN_TOKEN, USER_ID.
import http from "node:http";
import crypto from "node:crypto";
import ece from "http_ece";
import * as jose from "jose";

const base = process.env.HERALD_URL;
const fail = (msg) => {
  console.error("FAIL: " + msg);
  process.exit(1);
};
const b64u = (buf) => Buffer.from(buf).toString("base64url");

async function call(method, path, token, body) {
  const res = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json", authorization: "Bearer " + token },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const env = await res.json();
  if (!res.ok || !env.success) fail(`${method} ${path}: ${res.status} ${JSON.stringify(env)}`);
  return env.data;
}

// The push service: each push is kept and answered 201 Created.
const pushes = [];
let arrived;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    pushes.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks) });
    res.writeHead(201, { location: req.url });
    res.end();
    if (arrived) arrived();
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;

// The subscription, as PushManager.subscribe() would make it.
const receiver = crypto.createECDH("prime256v1");
receiver.generateKeys();
const authSecret = crypto.randomBytes(16);
const subscription = {
  endpoint: origin + "/push/" + crypto.randomBytes(8).toString("hex"),
  keys: { p256dh: b64u(receiver.getPublicKey()), auth: b64u(authSecret) },
};
const device = await call("POST", "/api/v1/devices", process.env.USER_TOKEN, {
  platform: "web",
  pushToken: JSON.stringify(subscription),
  name: "Node browser",
});
if (device.platform !== "web" || device.pushTokenStatus !== "valid") fail("registered " + JSON.stringify(device));

const subject = "Maintenance tonight";
const content = "Servers restart at 02:00 UTC, ünïcode ✓";
const waited = new Promise((resolve, reject) => {
  arrived = resolve;
  setTimeout(() => reject(new Error("no push reached the push service within 20 s")), 20000);
});
const sent = await call("POST", `/api/v1/notifications/users/${process.env.USER_ID}`, process.env.ADMIN_TOKEN, {
  notification: { subject, content, data: { screen: "status" } },
});
await waited.catch((e) => fail(e.message));
server.close();
if (pushes.length !== 1) fail(`${pushes.length} pushes`);
const push = pushes[0];
if (push.path !== new URL(subscription.endpoint).pathname) fail("pushed to " + push.path);
if (push.headers["content-encoding"] !== "aes128gcm") fail("content-encoding " + push.headers["content-encoding"]);
if (!(Number(push.headers.ttl) >= 0)) fail("no TTL header: " + JSON.stringify(push.headers));

// VAPID (RFC 8292): "vapid t=<JWT>, k=<the application server's key>".
const auth = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(push.headers.authorization || "");
if (!auth) fail("authorization " + push.headers.authorization);
const [, jwt, k] = auth;
const published = await (await fetch(base + "/api/v1/push/vapid-public-key")).json();
if (published.data.publicKey !== k) fail(`k=${k}, Herald publishes ${published.data.publicKey}`);
const point = Buffer.from(k, "base64url");
if (point.length !== 65 || point[0] !== 4) fail("k is not an uncompressed P-256 point");
const key = await jose.importJWK({ kty: "EC", crv: "P-256", x: b64u(point.subarray(1, 33)), y: b64u(point.subarray(33)) }, "ES256");
const { payload: claims, protectedHeader } = await jose.jwtVerify(jwt, key, { audience: origin, algorithms: ["ES256"] })
  .catch((e) => fail("the VAPID JWT does not verify: " + e.message));
const now = Math.floor(Date.now() / 1000);
if (!(claims.exp > now && claims.exp <= now + 24 * 3600)) fail("exp " + claims.exp);
if (!/^(mailto:|https:)/.test(claims.sub || "")) fail("sub " + claims.sub);

// The payload, decrypted as the browser would: with the subscription's
// private key and auth secret, the sender's key and salt from the header.
let plain;
try {
  plain = ece.decrypt(push.body, { version: "aes128gcm", privateKey: receiver, authSecret });
} catch (e) {
  fail("http_ece cannot decrypt the push: " + e.message);
}
const message = JSON.parse(plain.toString("utf8"));
if (message.title !== subject || message.body !== content || message.data?.screen !== "status") {
  fail("decrypted " + JSON.stringify(message));
}
// Another subscription's keys cannot read it.
const stranger = crypto.createECDH("prime256v1");
stranger.generateKeys();
let readable = true;
try {
  ece.decrypt(push.body, { version: "aes128gcm", privateKey: stranger, authSecret });
} catch {
  readable = false;
}
if (readable) fail("another subscription's key decrypted the push");

console.log(JSON.stringify({ ok: true, alg: protectedHeader.alg, sub: claims.sub, message, status: sent.status }));
