// A web or mobile client following a broadcast live with the graphql-ws
// library (graphql-transport-ws over WebSocket): the admin queues a
// broadcast over HTTP, subscribes to notificationJobUpdated and sees its
// counters grow to the end, when the subscription completes. Credentials
// that are refused at connection_init close the socket with 4403.
import assert from "node:assert/strict";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const base = process.env.HERALD_URL;
const token = process.env.TOKEN;
const total = Number(process.env.TOTAL);
const url = base.replace(/^http/, "ws") + "/graphql";

const res = await fetch(`${base}/graphql`, {
  method: "POST",
  headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
  body: JSON.stringify({ query: `mutation { sendNotificationToAll(notification: {subject: "Live", content: "over graphql-ws"}) { jobId totalRecipients } }` }),
});
const queued = (await res.json()).data.sendNotificationToAll;
assert.equal(queued.totalRecipients, total, "every device is a recipient");

function follow(connectionParams, query, variables) {
  const client = createClient({ url, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: true });
  const results = [];
  return new Promise((resolve, reject) => {
    client.subscribe({ query, variables }, {
      next: (r) => results.push(r),
      error: (e) => { client.dispose(); reject(e); },
      complete: () => { client.dispose(); resolve(results); },
    });
  });
}

const doc = `subscription ($id: ID!) { notificationJobUpdated(id: $id) { id status totalRecipients sent failed invalidTokens } }`;
const results = await follow({ token }, doc, { id: queued.jobId });
assert.ok(results.length >= 2, `at least the first state and the end, got ${JSON.stringify(results)}`);
const jobs = results.map((r) => {
  assert.equal(r.errors, undefined, JSON.stringify(r));
  return r.data.notificationJobUpdated;
});
for (let i = 1; i < jobs.length; i++) {
  assert.ok(jobs[i].sent >= jobs[i - 1].sent, `sent never goes back: ${JSON.stringify(jobs)}`);
}
assert.ok(jobs[0].sent < total, `the first state is before the end: ${JSON.stringify(jobs[0])}`);
const last = jobs.at(-1);
assert.deepEqual(last, { id: queued.jobId, status: "completed", totalRecipients: total, sent: total, failed: 0, invalidTokens: 0 });

// Refused credentials: the socket closes with 4403 Forbidden.
for (const params of [{}, { token: "not-a-token" }, { apiKey: "hk_0000000000000000_nope" }]) {
  await assert.rejects(follow(params, doc, { id: queued.jobId }), (e) => e.code === 4403, `connection_init with ${JSON.stringify(params)}`);
}
// An unknown job: the operation's error, the connection stays usable.
await assert.rejects(follow({ token }, doc, { id: "00000000-0000-7000-8000-000000000000" }),
  (errs) => Array.isArray(errs) && errs[0].extensions.code === "JOB_NOT_FOUND", "an unknown job");
console.log(`ok: graphql-ws followed ${queued.jobId} through ${jobs.length} updates to ${last.status}`);
