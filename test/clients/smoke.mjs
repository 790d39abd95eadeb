// The harness itself: node reaches the server and reads its envelope.
import assert from "node:assert/strict";

const base = process.env.HERALD_URL;
const res = await fetch(`${base}/api/v1/users/me`);
assert.equal(res.status, 401, "users/me without a token");
const body = await res.json();
assert.equal(body.success, false);
assert.equal(body.error.code, "AUTH_REQUIRED");
console.log("ok: node reached Herald");
