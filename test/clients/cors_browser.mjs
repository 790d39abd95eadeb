// A real browser on another origin calls Herald (TestBrowserCORS): Debian's
// Chromium, headless, driven by playwright-core, opens the page served
// from the allowed origin (ALLOWED_PAGE) and from another one
// (BLOCKED_PAGE); the page (cors_page.js) signs up over GraphQL, reads
// users/me over REST with the token in its query string, and reads the
// headers Herald exposes. The allowed page must see every answer, errors
// included; the other must see fetch fail with a TypeError, which is how a
// browser blocks a cross-origin answer. Exits non-zero, saying why,
// otherwise.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
// The background-networking flags keep Chromium from calling out: on a
// machine without outside network its connections are refused otherwise.
const args = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const deadline = 30_000; // any one browser step, in ms

const userDataDir = mkdtempSync(join(tmpdir(), "herald-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, { executablePath, headless: true, args, timeout: 60_000 });
try {
  context.setDefaultTimeout(deadline);
  const allowed = await visit(context, process.env.ALLOWED_PAGE);
  checkAllowed(allowed);
  const blocked = await visit(context, process.env.BLOCKED_PAGE);
  checkBlocked(blocked);
  console.log(`ok: a page on ${allowed.origin} called Herald; one on ${blocked.origin} was blocked by the browser`);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}

// visit opens the page and returns what its script saw.
async function visit(context, url) {
  assert.ok(url, "page URL not set");
  const page = await context.newPage();
  page.on("console", (m) => console.log(`[page ${new URL(url).origin}] ${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => console.log(`[page ${new URL(url).origin}] uncaught: ${e.message}`));
  await page.goto(url, { waitUntil: "load" });
  const seen = await page.evaluate(() => window.heraldResult);
  console.log(`what the page on ${seen.origin} saw:\n${JSON.stringify(seen, null, 2)}`);
  await page.close();
  return seen;
}

// answered asserts browser code could read an answer with this status.
function answered(what, r, status) {
  assert.ok(!r.error, `${what}: fetch failed (${r.error}: ${r.message}); want the answer readable`);
  assert.equal(r.status, status, `${what}: status`);
  assert.match(r.headers["X-Request-ID"] ?? "", /^\S+$/, `${what}: X-Request-ID not readable`);
}

function checkAllowed(seen) {
  answered("GraphQL signup", seen.signup, 200);
  assert.equal(seen.signup.body?.data?.signup?.success, true, "GraphQL signup: data.signup.success");
  assert.match(seen.signup.headers["X-RateLimit-Remaining"] ?? "", /^\d+$/, "GraphQL signup: X-RateLimit-Remaining not readable");
  assert.match(seen.signup.headers["X-RateLimit-Limit"] ?? "", /^\d+$/, "GraphQL signup: X-RateLimit-Limit not readable");
  assert.match(seen.signup.headers["X-RateLimit-Reset"] ?? "", /^\d+$/, "GraphQL signup: X-RateLimit-Reset not readable");

  answered("users/me", seen.me, 200);
  assert.equal(seen.me.body?.success, true, "users/me: success");
  assert.equal(seen.me.body?.data?.email, "browser@example.com", "users/me: data.email");
  assert.match(seen.me.headers["X-RateLimit-Remaining"] ?? "", /^\d+$/, "users/me: X-RateLimit-Remaining not readable");

  // Errors are readable too.
  answered("users/me with a bad token", seen.badToken, 401);
  assert.equal(seen.badToken.body?.error?.code, "TOKEN_INVALID", "users/me with a bad token: error.code");
  answered("devices without a token", seen.simple, 401);
  assert.equal(seen.simple.body?.error?.code, "AUTH_REQUIRED", "devices without a token: error.code");
}

function checkBlocked(seen) {
  for (const name of ["signup", "me", "badToken", "simple"]) {
    const r = seen[name];
    assert.equal(r.error, "TypeError", `${name} from a disallowed origin: the page saw ${JSON.stringify(r)}, want fetch to fail with a TypeError`);
  }
}
