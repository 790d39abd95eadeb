// The TypeScript SDK in Debian's Chromium (TestTypeScriptSDKInChromium):
// opens PAGE (sdk/typescript/test/browser/page.js, bundled, served from an
// origin of its own) and checks what the page saw: CORS let it read every
// answer (an error's code included), it logged in, read the user and the
// rate-limit headers, and followed a broadcast to completion over the
// browser's WebSocket. Exits non-zero, saying why, otherwise.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const userDataDir = mkdtempSync(join(tmpdir(), "herald-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, { executablePath, headless: true, args, timeout: 60_000 });
try {
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  page.on("console", (m) => console.log(`[page] ${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => console.log(`[page] uncaught: ${e.message}`));
  await page.goto(process.env.PAGE);
  await page.waitForFunction(() => document.getElementById("result")?.textContent !== "running");
  const got = JSON.parse(await page.textContent("#result"));
  console.log(JSON.stringify(got));
  assert.equal(got.error, undefined, got.error);
  assert.equal(got.badLogin, "INVALID_CREDENTIALS 401", "an error's envelope is readable across origins");
  assert.equal(got.login, "signedIn");
  assert.equal(got.me, process.env.EMAIL);
  assert.ok(got.rateLimit && got.rateLimit.limit > 0, "X-RateLimit-* are exposed to the page");
  assert.equal(got.totalRecipients, 1);
  assert.ok(got.seen.length >= 1);
  assert.equal(got.seen.at(-1), "completed:1");
  assert.deepEqual(got.events, ["SIGNED_IN"]);
  console.log(`ok: the SDK on ${got.origin} logged in and followed a broadcast live`);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
