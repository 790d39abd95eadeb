// A receiver of Herald's webhooks verifying them with the standardwebhooks
// npm package: it registers itself with an admin token, asks for a
// webhook.ping, verifies it (and refuses a tampered body), then rotates
// the secret and verifies the next ping with the old and the new secret.
import assert from "node:assert/strict";
import http from "node:http";
import { Webhook, WebhookVerificationError } from "standardwebhooks";

const base = process.env.HERALD_URL;
const token = process.env.TOKEN;

const waiting = [];
const received = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
    res.writeHead(204).end();
    while (waiting.length) waiting.shift()();
  });
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const url = `http://127.0.0.1:${server.address().port}/herald`;

async function api(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  assert.ok(json.success, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

// ping asks for a webhook.ping and waits until it arrives.
async function ping(id) {
  const { eventId } = await api("POST", `/api/v1/webhooks/${id}/ping`);
  const deadline = Date.now() + 20000;
  for (;;) {
    const got = received.find((d) => d.headers["webhook-id"] === eventId);
    if (got) return got;
    assert.ok(Date.now() < deadline, `the ping ${eventId} never arrived`);
    await new Promise((ok) => { waiting.push(ok); setTimeout(ok, 100); });
  }
}

const created = await api("POST", "/api/v1/webhooks", { url, description: "node receiver", eventTypes: ["user.created"] });
assert.match(created.secret, /^whsec_/);
const id = created.endpoint.id;

const first = await ping(id);
const payload = new Webhook(created.secret).verify(first.body, first.headers);
assert.equal(payload.type, "webhook.ping");
assert.equal(payload.data.endpointId, id);
assert.ok(!Number.isNaN(Date.parse(payload.timestamp)), "an ISO timestamp");
assert.throws(() => new Webhook(created.secret).verify(first.body.replace("ping", "pong"), first.headers), WebhookVerificationError, "a tampered body");

const rotated = await api("POST", `/api/v1/webhooks/${id}/rotate-secret`);
assert.notEqual(rotated.secret, created.secret);
const second = await ping(id);
assert.equal(second.headers["webhook-signature"].split(" ").length, 2, "two signatures during the overlap");
for (const secret of [rotated.secret, created.secret]) {
  assert.equal(new Webhook(secret).verify(second.body, second.headers).type, "webhook.ping");
}
server.close();
console.log("webhooks verified with standardwebhooks");
