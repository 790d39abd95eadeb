// The TypeScript SDK in Debian's Chromium (TestTypeScriptSDKInChromium):
// opens PAGE (sdk/typescript/test/browser/page.js, bundled, served from an
// origin of its own) and checks what the page saw: CORS let it read every
// answer (an error's code included), it logged in, read the user and the
// rate-limit headers, and followed a broadcast to completion over the
// browser's WebSocket. Then, with a virtual authenticator (DevTools
// WebAuthn), PASSKEY_PAGE (test/browser/passkey.js, at the relying party's
// origin http://localhost:<port>) registers a passkey through the SDK,
// signs in with it alone, and completes a password login's second step
// with it. Exits non-zero, saying why, otherwise.
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

  // Passkeys: a platform authenticator holding discoverable credentials,
  // verifying its user, that answers without a prompt.
  const keyPage = await context.newPage();
  keyPage.on("console", (m) => console.log(`[passkey page] ${m.type()}: ${m.text()}`));
  keyPage.on("pageerror", (e) => console.log(`[passkey page] uncaught: ${e.message}`));
  const cdp = await context.newCDPSession(keyPage);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  await keyPage.goto(process.env.PASSKEY_PAGE);
  await keyPage.waitForFunction(() => document.getElementById("result")?.textContent !== "running");
  const keys = JSON.parse(await keyPage.textContent("#result"));
  console.log(JSON.stringify(keys));
  assert.equal(keys.error, undefined, keys.error);
  assert.equal(keys.login, "signedIn");
  assert.equal(keys.registered, "SDK Chromium");
  assert.deepEqual(keys.passkeys, ["SDK Chromium"]);
  assert.equal(keys.passkeyMe, process.env.PASSKEY_EMAIL, "signed in with the passkey alone");
  assert.equal(keys.replayed, "PASSKEY_CHALLENGE_INVALID", "a ceremony works once");
  assert.ok(keys.mfa?.factors?.includes("passkey"), `a password login then needs a second step the passkey gives: ${JSON.stringify(keys.mfa)}`);
  assert.equal(keys.mfaMe, process.env.PASSKEY_EMAIL);
  assert.deepEqual(keys.lastUsed, [true]);
  assert.equal(keys.afterRemoval, 0);
  assert.deepEqual(keys.events, ["SIGNED_IN", "SIGNED_OUT", "SIGNED_IN", "SIGNED_OUT", "SIGNED_IN"]);
  const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  assert.equal(credentials.length, 1, "one credential in the virtual authenticator");
  assert.equal(credentials[0].rpId, "localhost");
  assert.ok(credentials[0].signCount >= 2, `two assertions signed: ${credentials[0].signCount}`);
  console.log(`ok: on ${keys.origin} the SDK registered a passkey, signed in with it, and completed a second step with it`);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
