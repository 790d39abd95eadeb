// The operator console in a real browser (TestConsole): Debian's Chromium,
// headless, driven by playwright-core, uses /console/ as an operator
// would, and every change made in the page is read back through the API
// with ADMIN_TOKEN (never through the page). The page runs under
// Herald's Content Security Policy: any violation, reported by the
// browser as a securitypolicyviolation event or a console message, fails
// the run, as does any uncaught error in the page. Exits non-zero, saying
// why, otherwise.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const base = process.env.HERALD_URL;
const { ADMIN_EMAIL, ADMIN_TOKEN, USER_EMAIL, GONE_EMAIL, GUEST_ID, PASSWORD, SCREENSHOT_DIR } = process.env;
// Ann's Apple identity's address (a private relay one); the operator with
// an authenticator app, its secret (base32) and two of its recovery codes.
const { APPLE_RELAY, TOTP_EMAIL, TOTP_SECRET, RECOVERY_CODES } = process.env;
// How many items the user's inbox holds (more than the page's 20): the
// oldest read by the user, the second seen.
const inboxItems = Number(process.env.INBOX_ITEMS);
// The console at http://localhost:<port>: WebAuthn needs a secure context
// and a relying party id that is a domain (HERALD_WEBAUTHN_RP_ID=localhost).
const passkeyBase = process.env.PASSKEY_URL;
const recoveryCodes = (RECOVERY_CODES ?? "").split(",");
const androidCount = Number(process.env.ANDROID_COUNT);
for (const [k, v] of Object.entries({ base, ADMIN_EMAIL, ADMIN_TOKEN, USER_EMAIL, GONE_EMAIL, GUEST_ID, PASSWORD, SCREENSHOT_DIR, androidCount, passkeyBase, APPLE_RELAY, TOTP_EMAIL, TOTP_SECRET, RECOVERY_CODES, inboxItems })) assert.ok(v, `${k} not set`);

const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
// The background-networking flags keep Chromium from calling out: on a
// machine without outside network its connections are refused otherwise.
const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const wide = { width: 1280, height: 900 };
const narrow = { width: 390, height: 844 };
// A zone an hour or two from UTC, so that a datetime-local value sent as
// local time is told apart from one sent as UTC.
const timezoneId = "Europe/Berlin";

// ---- The API, as another client sees it ----
async function gql(query, variables = {}) {
  const resp = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await resp.json();
  assert.ok(!body.errors, `API: ${JSON.stringify(body.errors)}`);
  return body.data;
}

// gqlError runs a query that must fail and returns its error code.
async function gqlError(query, variables = {}) {
  const resp = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await resp.json();
  assert.ok(body.errors?.length, `API: want an error, got ${JSON.stringify(body)}`);
  return body.errors[0].extensions?.code;
}

async function refresh(token) {
  const resp = await fetch(`${base}/api/v1/auth/refresh`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ refreshToken: token }),
  });
  return { status: resp.status, body: await resp.json() };
}

const JOB = "id status category totalRecipients sent failed invalidTokens skipped { optedOut capped } sendAt";
// The preference channels, in the order the page's columns show them.
const CHANNELS = ["push", "telegram", "email", "webPush", "inbox"];
const PREFERENCES = "categories { category critical channels { push telegram email webPush inbox } } timeZone quietHours { start end }";

// ---- TOTP (RFC 6238: HMAC-SHA1, 6 digits, 30 s), as an authenticator app ----
function base32(s) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0, value = 0;
  const out = [];
  for (const c of s.replace(/=+$/, "").toUpperCase()) {
    const i = alphabet.indexOf(c);
    assert.ok(i >= 0, `not base32: ${s}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

function totp(secret, atMillis) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(atMillis / 30_000)));
  const mac = createHmac("sha1", base32(secret)).update(counter).digest();
  const off = mac[mac.length - 1] & 0x0f;
  const bin = ((mac[off] & 0x7f) << 24) | (mac[off + 1] << 16) | (mac[off + 2] << 8) | mac[off + 3];
  return String(bin % 1_000_000).padStart(6, "0");
}
// RFC 6238's SHA-1 vector (secret "12345678901234567890", T = 59 s:
// 94287082, of which six digits).
assert.equal(totp("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", 59_000), "287082", "the script's TOTP against RFC 6238");

// claims decodes a JWT's payload.
function claims(jwt) {
  return JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());
}

// ---- What the browser reports ----
const violations = []; // securitypolicyviolation events and CSP console messages
const pageErrors = [];
let refreshTokens = []; // from every login and refresh the page made, in order
let broadcastRequests = 0; // sendNotificationToAll mutations the page sent
let eventStreams = 0; // progress streams the page opened

const userDataDir = mkdtempSync(join(tmpdir(), "herald-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath, headless: true, args, timeout: 60_000, viewport: wide, timezoneId, locale: "en-GB",
});
try {
  context.setDefaultTimeout(30_000);
  await context.exposeBinding("heraldCSPViolation", (_source, v) => violations.push(v));
  // Evaluated by the browser itself before the page's scripts, so the CSP
  // does not apply to it.
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.heraldCSPViolation({ directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber });
    });
  });
  const page = context.pages()[0] ?? await context.newPage();
  page.on("console", (m) => {
    console.log(`[page] ${m.type()}: ${m.text()}`);
    if (/Content Security Policy|Content-Security-Policy/i.test(m.text())) violations.push({ console: m.text() });
  });
  page.on("pageerror", (e) => { console.log(`[page] uncaught: ${e.message}`); pageErrors.push(e.message); });
  page.on("request", (r) => {
    if (r.url().endsWith("/graphql") && (r.postData() ?? "").includes("sendNotificationToAll")) broadcastRequests++;
    if (/\/api\/v1\/notifications\/broadcasts\/[^/]+\/events$/.test(r.url())) eventStreams++;
  });
  page.on("response", (r) => {
    if (/\/api\/v1\/auth\/(login|refresh)$/.test(r.url()) && r.status() === 200) {
      refreshTokens.push(r.json().then((b) => b.data.refreshToken));
    }
  });
  // The sessions a second step (a code or a passkey) gave, in order.
  const secondSteps = [];
  page.on("response", (r) => {
    if (/\/api\/v1\/auth\/login\/mfa(\/passkey\/finish)?$/.test(r.url()) && r.status() === 200) {
      secondSteps.push(r.json().then((b) => b.data.token));
    }
  });

  // ---- The page and its headers ----
  const first = await page.goto(`${base}/console/`, { waitUntil: "load" });
  assert.equal(first.status(), 200, "GET /console/");
  const csp = first.headers()["content-security-policy"] ?? "";
  assert.match(csp, /script-src 'self'/, `CSP header: ${csp}`);
  assert.match(csp, /style-src 'self'/, `CSP header: ${csp}`);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, `CSP header: ${csp}`);
  console.log(`ok: /console/ carries Content-Security-Policy: ${csp}`);

  // ---- A non-admin is refused ----
  await signIn(page, USER_EMAIL);
  await page.locator('#error[data-code="NOT_AN_ADMIN"]').waitFor();
  assert.match(await page.locator("#error").innerText(), /not an admin/i, "the refusal says why");
  assert.ok(await page.locator("form.signin").isVisible(), "the sign-in form stays");
  assert.ok(await page.locator("#nav").isHidden(), "no navigation for a non-admin");
  // The console logged the refused session out: its refresh token is dead.
  const refused = await refresh(await refreshTokens.at(-1));
  assert.equal(refused.status, 401, `the non-admin's refresh token after the refusal: ${JSON.stringify(refused.body)}`);
  console.log(`ok: ${USER_EMAIL} refused (NOT_AN_ADMIN), their session ended (${refused.body.error.code})`);

  // ---- An admin signs in: the overview ----
  await signIn(page, ADMIN_EMAIL);
  await page.locator("#overview[data-loaded]").waitFor();
  await noError(page, "overview");
  const { adminOverview: o } = await gql("{ adminOverview { accounts { total } devices { total } } }");
  assert.equal(await page.locator('#overview section[aria-label="Accounts"] .big').innerText(), String(o.accounts.total), "overview: accounts");
  assert.equal(await page.locator('#overview section[aria-label="Devices"] .big').innerText(), String(o.devices.total), "overview: devices");
  assert.equal(await page.locator("#who").innerText(), ADMIN_EMAIL);
  await shot(page, "overview");
  console.log(`ok: overview shows ${o.accounts.total} accounts and ${o.devices.total} devices, as the API`);

  // ---- Find the user ----
  await page.getByRole("link", { name: "Users", exact: true }).click();
  await page.locator("#users").waitFor();
  await page.getByLabel("Email or id").fill(USER_EMAIL.split("@")[0] + "@");
  await page.getByLabel("Plan").selectOption("trial");
  await page.getByRole("button", { name: "Search" }).click();
  await page.waitForURL(/#\/users\/.*plan%3Dtrial/);
  const link = page.locator("#users a.user-link");
  await link.first().waitFor();
  assert.deepEqual(await link.allInnerTexts(), [USER_EMAIL], "search by the email's beginning, plan trial");
  await noError(page, "users");
  await shot(page, "users");
  await link.click();

  // ---- The user's page: change the plan, confirmed by the API ----
  await page.waitForURL(/#\/user\//);
  const userId = decodeURIComponent(page.url().split("#/user/")[1]);
  await page.locator("#user-email", { hasText: USER_EMAIL }).waitFor();
  await page.locator("#devices tbody tr").nth(1).waitFor();
  assert.equal(await page.locator("#devices tbody tr").count(), 2, "the user's two devices");
  // The signup's trial: the one entitlement, its one change.
  await page.locator("#entitlements tbody tr").first().waitFor();
  assert.equal(await page.locator("#current-source").innerText(), "trial", "the subscription's source");
  assert.deepEqual(await page.locator("#entitlements tbody tr td:nth-child(3)").allInnerTexts(), ["trial"], "the trial entitlement's state");
  assert.deepEqual(await page.locator("#history tbody tr td:nth-child(2)").allInnerTexts(), ["signup"], "the signup in the history");
  // A manual grant: an admin entitlement that ends the trial.
  await page.getByLabel("Plan").selectOption("premium");
  await page.getByLabel(/^Expires/).fill("2030-01-01T00:00");
  await page.getByRole("button", { name: "Grant" }).click();
  await page.locator("#current-plan", { hasText: "premium" }).waitFor();
  await page.locator("#history tbody tr").nth(2).waitFor();
  await noError(page, "manual grant");
  const { user } = await gql("query ($id: ID!) { user(id: $id) { email subscription { plan expiresAt source } } }", { id: userId });
  assert.equal(user.email, USER_EMAIL);
  assert.equal(user.subscription.plan, "premium", "plan through the API");
  assert.equal(user.subscription.source, "admin", "source through the API");
  // Midnight in Berlin (UTC+1 in winter) is 23:00 UTC the day before.
  assert.equal(user.subscription.expiresAt, "2029-12-31T23:00:00Z", "expiry through the API");
  assert.equal(await page.locator("#current-source").innerText(), "admin", "the source shown after the grant");
  const { userSubscription: detail } = await gql("query ($id: ID!) { userSubscription(id: $id) { entitlements { source state } history { cause } } }", { id: userId });
  const shownStates = await page.locator("#entitlements tbody tr td:nth-child(3)").allInnerTexts();
  assert.deepEqual(shownStates.toSorted(), detail.entitlements.map((e) => e.state).toSorted(), "entitlement states as the API says");
  assert.deepEqual(await page.locator("#history tbody tr td:nth-child(2)").allInnerTexts(), detail.history.map((c) => c.cause), "history as the API says");
  console.log(`ok: plan granted in the page is ${user.subscription.plan} until ${user.subscription.expiresAt} through the API; entitlements ${shownStates.join(", ")}`);
  // Reconcile now: no store is connected, so nothing is read.
  await page.getByRole("button", { name: "Reconcile now" }).click();
  await page.locator(".notice", { hasText: "no store purchase" }).waitFor();
  await noError(page, "reconcile now");
  console.log("ok: reconcile now answered for an account without store purchases");

  // A test notification: one outcome per device.
  await page.getByRole("button", { name: "Send test" }).click();
  await page.locator("#outcomes tr.outcome").nth(1).waitFor();
  assert.deepEqual(await page.locator("#outcomes tr.outcome td:nth-child(4)").allInnerTexts(), ["sent", "sent"], "test notification outcomes");
  // And by email: one more outcome, queued.
  await page.getByLabel("Also by email (to the verified address)").check();
  await page.getByRole("button", { name: "Send test" }).click();
  await page.locator("#outcomes tr.outcome").nth(2).waitFor();
  assert.deepEqual(await page.locator("#outcomes tr.outcome td:nth-child(4)").allInnerTexts(), ["sent", "sent", "queued"], "test notification outcomes by email too");
  assert.deepEqual(await page.locator("#outcomes tr.outcome td:nth-child(3)").allInnerTexts(), ["push", "push", "email"], "test notification channels by email too");
  console.log("ok: the test notification by email too is queued");
  await page.getByLabel("Also by email (to the verified address)").uncheck(); // the later tests send to the devices alone
  // End the user's sessions, disable and enable the account: each read back.
  await page.getByRole("button", { name: "End all sessions" }).click();
  await page.locator("#sessions", { hasText: "No live session." }).waitFor();
  await page.getByLabel("Reason (optional)").fill("console test");
  await page.getByRole("button", { name: "Disable account" }).click();
  await page.locator("#access", { hasText: "console test" }).waitFor();
  let { user: state } = await gql("query ($id: ID!) { user(id: $id) { disabled disabledReason sessionCount } }", { id: userId });
  assert.deepEqual(state, { disabled: true, disabledReason: "console test", sessionCount: 0 }, "after ending sessions and disabling");
  await page.getByRole("button", { name: "Enable account" }).click();
  await page.getByRole("button", { name: "Disable account" }).waitFor();
  ({ user: state } = await gql("query ($id: ID!) { user(id: $id) { disabled } }", { id: userId }));
  assert.equal(state.disabled, false, "after enabling");
  console.log("ok: sessions ended, account disabled with its reason and enabled again, as the API says");
  // The security log shows those three admin actions, newest first, as the API reads it.
  await page.locator("#security-log tbody tr", { hasText: "admin_action" }).nth(2).waitFor();
  const { userSecurityLog: seclog } = await gql("query ($userId: ID!) { userSecurityLog(userId: $userId, first: 50) { nodes { kind } } }", { userId });
  assert.deepEqual(await page.locator("#security-log tbody tr td:nth-child(2)").allInnerTexts(), seclog.nodes.map((e) => e.kind), "security log kinds as the API says");
  console.log(`ok: the security log shows ${seclog.nodes.length} entries, as the API says`);

  // Sign-in identities: Google (linked by the verified address) and Apple
  // (a private relay address), in the order linked, as the API reads them.
  const { userIdentities: idents } = await gql(`query ($userId: ID!) { userIdentities(userId: $userId) { provider email privateRelay createdAt lastUsedAt } }`, { userId });
  assert.deepEqual(idents.map((i) => [i.provider, i.email, i.privateRelay]), [["google", USER_EMAIL, false], ["apple", APPLE_RELAY, true]], "the identities through the API");
  const identityRows = page.locator("#identities tbody tr");
  await shown(identityRows.nth(1), "two rows in the user's sign-in identities");
  const cells = await identityRows.evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.innerText.trim())));
  const times = await page.evaluate((list) => list.map((i) => [new Date(i.createdAt).toLocaleString(), i.lastUsedAt ? new Date(i.lastUsedAt).toLocaleString() : "never"]), idents);
  assert.deepEqual(cells.map((c) => [c[0], c[2], c[3]]), [["Google", ...times[0]], ["Apple", ...times[1]]], "the identities' provider, linked and last used times");
  for (const [n, i] of idents.entries()) {
    assert.ok(cells[n][1].includes(i.email), `identity ${n}: the email cell ${cells[n][1]} lacks ${i.email}`);
    assert.equal(cells[n][1].includes("private relay"), i.privateRelay, `identity ${n}: the email cell ${cells[n][1]} says private relay: want ${i.privateRelay}`);
  }
  console.log(`ok: the user's sign-in identities are shown as the API reads them: ${cells.map((c) => c.slice(0, 2).join(" ")).join("; ")}`);

  // ---- The in-app inbox: the newest 20, "Load more", archive one and all, read back through the API ----
  const inboxSection = page.locator('section[aria-label="Inbox"]');
  const inboxRows = page.locator("#inbox tbody tr");
  const readInbox = async (archived = false) => (await gql(`query ($userId: ID!, $archived: Boolean) {
    userInbox(userId: $userId, first: 100, archived: $archived) { nodes { id title category createdAt seenAt readAt archivedAt } } }`, { userId, archived })).userInbox.nodes;
  const readInboxCounts = async () => (await gql("query ($userId: ID!) { userInboxCounts(userId: $userId) { unseen unread } }", { userId })).userInboxCounts;
  // tableOfInbox is the table as [title, category, created, state] per row;
  // apiInbox is the same of items as the API reads them.
  const tableOfInbox = () => inboxRows.evaluateAll((trs) => trs.map((tr) => [tr.cells[0].querySelector("strong").textContent, tr.cells[1].innerText.trim(),
    tr.cells[2].innerText.trim(), tr.cells[3].innerText.trim().split(/\s+/).join(" ")]));
  const apiInbox = (items) => page.evaluate((list) => list.map((it) => [it.title, it.category, new Date(it.createdAt).toLocaleString(),
    [it.seenAt ? "seen" : "unseen", it.readAt ? "read" : null, it.archivedAt ? "archived" : null].filter(Boolean).join(" ")]), items);
  const shownCounts = async (c, what) => {
    await shown(page.locator("#inbox-unseen", { hasText: new RegExp(`^${c.unseen}$`) }), `${c.unseen} unseen ${what}`);
    assert.equal(await page.locator("#inbox-unread").innerText(), String(c.unread), `unread ${what}`);
  };
  let inboxNodes = await readInbox();
  assert.equal(inboxNodes.length, inboxItems, "the inbox's items through the API");
  await shown(inboxRows.nth(19), "20 rows in the user's inbox");
  assert.equal(await inboxRows.count(), 20, "the inbox's first page");
  assert.deepEqual(await tableOfInbox(), await apiInbox(inboxNodes.slice(0, 20)), "the inbox's first page against the API");
  let inboxCounts = await readInboxCounts();
  assert.deepEqual(inboxCounts, { unseen: inboxItems - 2, unread: inboxItems - 1 }, "the inbox counts through the API");
  await shownCounts(inboxCounts, "at first");
  // Load more: the rest, down to the oldest, read and seen by the user.
  await inboxSection.getByRole("button", { name: "Load more" }).click();
  await shown(inboxRows.nth(inboxItems - 1), `${inboxItems} rows after "Load more"`);
  assert.deepEqual(await tableOfInbox(), await apiInbox(inboxNodes), "the whole inbox against the API");
  assert.deepEqual((await tableOfInbox()).slice(-2).map((r) => r[3]), ["seen", "seen read"], "the oldest two items' state");
  await shown(inboxSection.getByRole("button", { name: "Load more" }), "no more to load", "hidden");
  await noError(page, "inbox");
  // Archive the newest: out of the inbox, into the archive, not marked seen.
  const newest = inboxNodes[0];
  await inboxSection.getByRole("button", { name: `Archive ${newest.title}`, exact: true }).click();
  await shown(page.locator(".notice", { hasText: `"${newest.title}" archived` }), "the notice of the item archived");
  inboxCounts = await readInboxCounts();
  assert.deepEqual(inboxCounts, { unseen: inboxItems - 3, unread: inboxItems - 2 }, "the inbox counts through the API after archiving one");
  await shownCounts(inboxCounts, "after archiving one");
  const [withdrawn] = await readInbox(true);
  assert.equal(withdrawn?.id, newest.id, "the archive holds the item archived");
  assert.ok(withdrawn.archivedAt && !withdrawn.seenAt && !withdrawn.readAt, `the item archived by the operator: ${JSON.stringify(withdrawn)}`);
  inboxNodes = await readInbox();
  assert.deepEqual(await tableOfInbox(), await apiInbox(inboxNodes.slice(0, 20)), "the inbox after archiving one against the API");
  // Archive all: the inbox empties; the archive shows every item, seen
  // only where the user saw it.
  await inboxSection.getByRole("button", { name: "Archive all", exact: true }).click();
  await shown(page.locator(".notice", { hasText: "archived up to the newest item shown" }), "the notice of the inbox archived");
  assert.deepEqual(await readInboxCounts(), { unseen: 0, unread: 0 }, "the inbox counts through the API after archiving all");
  await shownCounts({ unseen: 0, unread: 0 }, "after archiving all");
  await shown(inboxSection.getByText("Nothing here.", { exact: true }), "the empty inbox");
  assert.equal(await inboxRows.count(), 0, "rows in the empty inbox");
  assert.ok(await inboxSection.getByRole("button", { name: "Archive all", exact: true }).isDisabled(), "archive all enabled for an empty inbox");
  await inboxSection.getByLabel("Inbox or archive").selectOption("archive");
  await shown(inboxRows.nth(19), "20 rows in the archive");
  const archive = await readInbox(true);
  assert.equal(archive.length, inboxItems, "the archive through the API");
  assert.deepEqual(await tableOfInbox(), await apiInbox(archive.slice(0, 20)), "the archive against the API");
  assert.deepEqual(archive.filter((it) => it.seenAt).map((it) => it.title).toSorted(), ["Inbox 1", "Inbox 2"], "the items seen: only those the user saw");
  for (const b of await inboxSection.getByRole("button", { name: /^Archive Inbox/ }).all()) assert.ok(await b.isDisabled(), "an archived item's archive button is enabled");
  await noError(page, "inbox archived");
  console.log(`ok: the user's inbox shows ${inboxItems} items as the API reads them (20, then "Load more"), archives one and all without marking them seen; the archive lists them`);

  // ---- Notification preferences: switched in the page, read back through the API ----
  const readPrefs = async () => (await gql(`query ($userId: ID!) { userNotificationPreferences(userId: $userId) { ${PREFERENCES} } }`, { userId })).userNotificationPreferences;
  let prefs = await readPrefs();
  const prefRows = page.locator("#preferences tbody tr");
  await shown(prefRows.nth(prefs.categories.length - 1), `${prefs.categories.length} rows in the notification preferences`);
  // tableOfPrefs is the table as [category, critical badge, [channel, on, disabled]…] per row.
  const tableOfPrefs = () => prefRows.evaluateAll((trs) => trs.map((tr) => [tr.cells[0].querySelector("code").textContent, tr.cells[0].innerText.includes("critical"),
    [...tr.querySelectorAll("input[type=checkbox]")].map((b) => [b.dataset.channel, b.checked, b.disabled])]));
  const apiTable = (p) => p.categories.map((c) => [c.category, c.critical, CHANNELS.map((ch) => [ch, c.channels[ch], c.critical])]);
  assert.deepEqual(await tableOfPrefs(), apiTable(prefs), "the preferences table against the API");
  assert.deepEqual(prefs.categories.filter((c) => c.critical).map((c) => c.category), ["security", "billing"], "the critical categories through the API");
  const securityBoxes = page.locator('#preferences input[data-category="security"]');
  assert.equal(await securityBoxes.count(), CHANNELS.length, "security's switches");
  for (const box of await securityBoxes.all()) assert.ok(await box.isDisabled() && await box.isChecked(), `security's ${await box.getAttribute("data-channel")} switch is not on and disabled`);
  // Product off on push, from the page.
  await page.getByRole("checkbox", { name: "product on Push", exact: true }).click();
  await shown(page.locator(".notice", { hasText: "product is off on Push." }), "the notice that product is off on push");
  await noError(page, "product push off");
  prefs = await readPrefs();
  assert.deepEqual(prefs.categories.find((c) => c.category === "product").channels, { push: false, telegram: true, email: true, webPush: true, inbox: true }, "product's channels through the API after the switch");
  assert.deepEqual(await tableOfPrefs(), apiTable(prefs), "the preferences table after the switch against the API");
  console.log("ok: product switched off on push in the page, as the API reads it; security's switches on and disabled");
  // A switch Herald refuses: the page's request is sent on naming a
  // category the deployment does not have, so that Herald's own refusal
  // comes back; the page shows it and puts the switch back.
  const rewrite = async (route) => {
    const body = route.request().postDataJSON();
    if (!body?.query?.includes("updateUserNotificationPreferences") || !body.variables?.settings) return route.continue();
    body.variables.settings = body.variables.settings.map((st) => ({ ...st, category: "no-such-category" }));
    return route.continue({ postData: JSON.stringify(body) });
  };
  await page.route("**/graphql", rewrite);
  const messagesEmail = page.getByRole("checkbox", { name: "messages on Email", exact: true });
  await messagesEmail.click();
  await shown(page.locator('#error[data-code="VALIDATION_ERROR"]', { hasText: "category" }), "VALIDATION_ERROR naming category for a refused switch");
  await page.unroute("**/graphql", rewrite);
  for (const until = Date.now() + 5_000; !(await messagesEmail.isChecked());) {
    assert.ok(Date.now() < until, "the refused switch was not put back on within 5 s");
    await page.waitForTimeout(50);
  }
  prefs = await readPrefs();
  assert.equal(prefs.categories.find((c) => c.category === "messages").channels.email, true, "messages on email through the API after a refused switch");
  assert.deepEqual(await tableOfPrefs(), apiTable(prefs), "the preferences table after a refused switch against the API");
  console.log(`ok: a refused switch shows Herald's refusal and is put back: ${await page.locator("#error").innerText()}`);
  // Quiet hours 22:00–07:00 in Berlin, read back through the API.
  const zoneIn = page.getByLabel("Time zone (IANA)");
  await zoneIn.fill("Europe/Berlin");
  await page.getByLabel("Quiet from").fill("22:00");
  await page.getByLabel("Quiet until").fill("07:00");
  await page.getByLabel("Quiet hours on").check();
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await shown(page.locator("#pref-quiet", { hasText: "22:00–07:00" }), "the quiet hours 22:00–07:00 after saving");
  await noError(page, "quiet hours");
  prefs = await readPrefs();
  assert.deepEqual([prefs.timeZone, prefs.quietHours], ["Europe/Berlin", { start: "22:00", end: "07:00" }], "the zone and quiet hours through the API");
  assert.equal(await page.locator("#pref-zone").innerText(), "Europe/Berlin", "the zone shown");
  // A zone that is none: Herald's refusal is shown, nothing changes.
  await zoneIn.fill("Mars/Olympus");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await shown(page.locator('#error[data-code="VALIDATION_ERROR"]', { hasText: "timeZone" }), "VALIDATION_ERROR naming timeZone for Mars/Olympus");
  prefs = await readPrefs();
  assert.equal(prefs.timeZone, "Europe/Berlin", "the zone through the API after a refused one");
  console.log(`ok: quiet hours 22:00–07:00 Europe/Berlin set in the page and read back; a bad zone refused: ${await page.locator("#error").innerText()}`);
  // Quiet hours around now in Berlin: a test is held until their end; an
  // urgent one goes at once.
  const berlin = (ms) => new Date(ms).toLocaleTimeString("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  const [quietStart, quietEnd] = [berlin(Date.now() - 3600_000), berlin(Date.now() + 2 * 3600_000)];
  await zoneIn.fill("Europe/Berlin");
  await page.getByLabel("Quiet from").fill(quietStart);
  await page.getByLabel("Quiet until").fill(quietEnd);
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await shown(page.locator("#pref-quiet", { hasText: `${quietStart}–${quietEnd}` }), `the quiet hours ${quietStart}–${quietEnd} after saving`);
  const testSent = () => page.waitForResponse((r) => r.url().endsWith("/graphql") && (r.request().postData() ?? "").includes("sendNotificationToUser"), { timeout: 15_000 });
  let answer = testSent();
  await page.getByRole("button", { name: "Send test" }).click();
  const held = (await (await answer).json()).data.sendNotificationToUser;
  assert.equal(held.status, "held", `a test inside the quiet hours ${quietStart}–${quietEnd}: ${JSON.stringify(held)}`);
  assert.equal(berlin(Date.parse(held.heldUntil)), quietEnd, `held until ${held.heldUntil}: want the end of the quiet hours, ${quietEnd} in Berlin`);
  const heldText = await page.evaluate((iso) => `Held until ${new Date(iso).toLocaleString()}.`, held.heldUntil);
  await shown(page.locator("#outcomes", { hasText: heldText }), `"${heldText}" in the outcome`);
  await page.getByLabel(/^Urgent/).check();
  answer = testSent();
  await page.getByRole("button", { name: "Send test" }).click();
  const urgent = (await (await answer).json()).data.sendNotificationToUser;
  assert.equal(urgent.status, "sent", `an urgent test inside the quiet hours: ${JSON.stringify(urgent)}`);
  await shown(page.locator("#outcomes tr.outcome").nth(1), "the urgent test's two outcomes");
  assert.deepEqual(await page.locator("#outcomes tr.outcome td:nth-child(4)").allInnerTexts(), ["sent", "sent"], "the urgent test's outcomes");
  await page.getByLabel(/^Urgent/).uncheck();
  await noError(page, "held and urgent tests");
  console.log(`ok: inside quiet hours ${quietStart}–${quietEnd} Europe/Berlin a test is held until ${held.heldUntil}; an urgent one is sent at once`);
  // Cleared: no quiet hours, the zone kept.
  await page.getByLabel("Quiet hours on").uncheck();
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await shown(page.locator("#pref-quiet", { hasText: "none" }), "no quiet hours after clearing them");
  await noError(page, "quiet hours cleared");
  prefs = await readPrefs();
  assert.deepEqual([prefs.timeZone, prefs.quietHours], ["Europe/Berlin", null], "the zone and quiet hours through the API after clearing");
  // A product test now reaches none of the user's phones: both skipped.
  const testCategory = page.getByRole("form", { name: "Send a test notification" }).getByLabel(/^Category/);
  await shown(testCategory, "the test notification's category");
  await testCategory.selectOption("product");
  await page.getByRole("button", { name: "Send test" }).click();
  await shown(page.locator("#outcomes .opted-out", { hasText: "2 skipped" }), "two devices skipped for product");
  assert.match(await page.locator("#outcomes").innerText(), /no_recipients/, "the product test's status");
  console.log("ok: quiet hours cleared; a product test skipped both phones (opted out)");

  // Deletion waits for the email to be typed.
  const del = page.getByRole("button", { name: "Delete account" });
  assert.ok(await del.isDisabled(), "delete enabled before the email is typed");
  await page.getByLabel(/^Type .* to confirm$/).fill("someone@else.example");
  assert.ok(await del.isDisabled(), "delete enabled with another email typed");
  await page.getByLabel(/^Type .* to confirm$/).fill(USER_EMAIL);
  assert.ok(await del.isEnabled(), "delete not enabled with the email typed");
  await page.getByLabel(/^Type .* to confirm$/).fill("");
  await noError(page, "user");
  await shot(page, "user");

  // ---- Broadcasts: compose, refuse bad data without a request ----
  await page.getByRole("link", { name: "Broadcasts", exact: true }).click();
  await page.locator("#compose").waitFor();
  const subject = "Maintenance tonight";
  const content = "The VPN servers restart at 02:00 UTC for about ten minutes.";
  await page.getByLabel("Subject").fill(subject);
  await page.getByLabel("Content").fill(content);
  for (const platform of ["android", "ios"]) {
    assert.equal(await page.locator(`#preview-${platform} .pv-title`).innerText(), subject, `${platform} preview title`);
    assert.equal(await page.locator(`#preview-${platform} .pv-body`).innerText(), content, `${platform} preview body`);
  }
  const dataIn = page.getByLabel(/^Data/);
  // Checked as it is typed, before any click: a problem shows once typing
  // pauses (the field keeps the focus), and a fix clears it at once.
  await dataIn.click();
  await dataIn.pressSequentially('{"screen": 1', { delay: 10 });
  await page.locator(".field-error", { hasText: /Not valid JSON/ }).waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.name), "data", "the check as typed took the focus away");
  await dataIn.press("End");
  await dataIn.pressSequentially("}");
  await page.locator(".field-error", { hasText: /not a string/ }).waitFor();
  assert.equal(await dataIn.getAttribute("aria-invalid"), "true", "data typed with a number value: aria-invalid");
  await dataIn.fill('{"screen": "1"}');
  await page.locator(".field-error").waitFor({ state: "detached" });
  assert.equal(await dataIn.getAttribute("aria-invalid"), null, "valid data typed: still aria-invalid");
  console.log("ok: the data field is checked as it is typed");
  for (const [bad, says] of [['{"screen": 1}', /not a string/], ["[1, 2]", /JSON object/], ["{screen", /Not valid JSON/]]) {
    await dataIn.fill(bad);
    await page.getByRole("button", { name: "Send now" }).click();
    await page.locator(".field-error", { hasText: says }).waitFor();
    assert.equal(await dataIn.getAttribute("aria-invalid"), "true", `data ${bad}: aria-invalid`);
  }
  assert.equal(broadcastRequests, 0, "a broadcast request was sent with invalid data");
  console.log("ok: invalid data refused in the page, no request sent");

  // ---- Send to the android devices and watch the bar ----
  await dataIn.fill('{"screen": "status"}');
  assert.equal(await page.locator(".field-error").count(), 0, "the field error stays after the data was fixed");
  await page.getByRole("checkbox", { name: "android" }).check();
  // product: Ann turned it off on push above, so her Pixel is skipped.
  const broadcastCategory = page.getByLabel(/^Category/);
  await shown(broadcastCategory.locator('option[value="product"]'), "product among the broadcast's categories", "attached");
  await broadcastCategory.selectOption("product");
  await page.getByRole("button", { name: "Send now" }).click();
  const row = page.locator("#jobs tbody tr").filter({ has: page.locator(`.job`, { hasText: subject }) }).first();
  await row.waitFor();
  const jobId = await row.locator(".job").getAttribute("data-job");
  const bar = row.getByRole("progressbar");
  const seen = new Set();
  let shotTaken = false;
  for (const until = Date.now() + 60_000; ;) {
    assert.ok(Date.now() < until, `job ${jobId} did not complete within a minute (bar values seen: ${[...seen]})`);
    const value = Number(await bar.getAttribute("aria-valuenow"));
    seen.add(value);
    if (!shotTaken && value >= 20 && value < 100) {
      await shot(page, "broadcasts");
      shotTaken = true;
    }
    if ((await row.locator(".job-status").getAttribute("data-status")) === "completed") break;
    await page.waitForTimeout(50);
  }
  await noError(page, "broadcast");
  assert.equal(await bar.getAttribute("aria-valuenow"), "100", "the bar at the end");
  assert.ok([...seen].some((v) => v > 0 && v < 100), `the bar never moved between 0 and 100: ${[...seen]}`);
  assert.ok(shotTaken, "no screenshot of the broadcast in progress");
  assert.ok(eventStreams >= 1, "the page never opened the job's event stream");
  const counters = await row.locator(".counters").evaluate((el) => ({ ...el.dataset }));
  const { notificationJob: job } = await gql(`query ($id: ID!) { notificationJob(id: $id) { ${JOB} } }`, { id: jobId });
  assert.equal(job.status, "completed");
  assert.equal(job.totalRecipients, androidCount, "the audience: every android device");
  assert.deepEqual(
    { sent: +counters.sent, failed: +counters.failed, invalid: +counters.invalid, optedOut: +counters.optedOut, capped: Number(counters.capped), total: +counters.total },
    { sent: job.sent, failed: job.failed, invalid: job.invalidTokens, optedOut: job.skipped.optedOut, capped: job.skipped.capped, total: job.totalRecipients },
    "the page's counters against the job");
  assert.equal(job.category, "product", "the job's category through the API");
  assert.equal(await row.locator(".job-category").innerText(), "product", "the job's category in the list");
  assert.equal(job.skipped.optedOut, 1, "Ann's Pixel skipped: product is off on push for her");
  assert.equal(job.sent, androidCount - 1, "every other android device sent to");
  assert.equal(broadcastRequests, 1, "broadcast requests");
  console.log(`ok: job ${jobId} followed live (bar values ${[...seen].sort((a, b) => a - b).join(",")}), counters as the API: ${JSON.stringify(counters)}`);

  // ---- Schedule one, then cancel it ----
  await page.getByLabel("Subject").fill("Spring offer");
  await page.getByLabel("Content").fill("Premium at half price this week.");
  await dataIn.fill("");
  const local = await page.evaluate(() => {
    const d = new Date(Date.now() + 24 * 3600 * 1000);
    d.setSeconds(0, 0);
    const pad = (n) => String(n).padStart(2, "0");
    return { value: `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`, iso: d.toISOString().replace(".000Z", "Z") };
  });
  // More than 30 days ahead: Herald refuses it, and the page says so.
  const tooFar = await page.evaluate(() => {
    const d = new Date(Date.now() + 40 * 24 * 3600 * 1000);
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  });
  await page.getByLabel(/^Send at/).fill(tooFar);
  await page.getByRole("button", { name: "Schedule" }).click();
  await page.locator('#error[data-code="VALIDATION_ERROR"]', { hasText: "sendAt" }).waitFor();
  console.log(`ok: a refusal is shown with its code: ${await page.locator("#error").innerText()}`);
  await page.getByLabel(/^Send at/).fill(local.value);
  await page.getByRole("button", { name: "Schedule" }).click();
  const planned = page.locator("#jobs tbody tr").filter({ has: page.locator(".job", { hasText: "Spring offer" }) }).first();
  await planned.locator('.job-status[data-status="scheduled"]').waitFor();
  const plannedId = await planned.locator(".job").getAttribute("data-job");
  let { notificationJob: pj } = await gql(`query ($id: ID!) { notificationJob(id: $id) { ${JOB} } }`, { id: plannedId });
  assert.equal(pj.status, "scheduled");
  assert.equal(pj.sendAt, local.iso, "sendAt: the local time given, in UTC");
  await planned.getByRole("button", { name: "Cancel" }).click();
  await planned.locator('.job-status[data-status="cancelled"]').waitFor();
  ({ notificationJob: pj } = await gql(`query ($id: ID!) { notificationJob(id: $id) { ${JOB} } }`, { id: plannedId }));
  assert.equal(pj.status, "cancelled", "the cancelled job through the API");
  assert.ok(await planned.getByRole("button", { name: "Cancel" }).isHidden(), "cancel still offered for a cancelled job");
  await noError(page, "schedule and cancel");
  console.log(`ok: job ${plannedId} scheduled for ${pj.sendAt}, then cancelled`);

  // ---- 390 px wide: nothing wider than the screen ----
  await page.setViewportSize(narrow);
  for (const [hash, ready] of [["#/overview", "#overview[data-loaded]"], ["#/users", "#users tbody tr"], [`#/user/${encodeURIComponent(userId)}`, "#devices tbody tr"], ["#/broadcasts", "#jobs tbody tr"]]) {
    await page.evaluate((h) => { location.hash = h; }, hash);
    await page.locator(ready).first().waitFor();
    await noError(page, `${hash} at 390 px`);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= narrow.width, `${hash} at ${narrow.width} px is ${width} px wide`);
  }
  await page.setViewportSize(wide);
  console.log("ok: every page fits 390 px");

  // ---- Delete an account, confirmed by typing its email ----
  await page.evaluate((q) => { location.hash = `#/users/${encodeURIComponent(q)}`; }, `query=${GONE_EMAIL}`);
  await page.locator("#users a.user-link", { hasText: GONE_EMAIL }).click();
  await page.locator("#user-email", { hasText: GONE_EMAIL }).waitFor();
  const goneId = decodeURIComponent(page.url().split("#/user/")[1]);
  await page.getByLabel(/^Type .* to confirm$/).fill(GONE_EMAIL);
  await page.getByRole("button", { name: "Delete account" }).click();
  await page.getByRole("heading", { name: "Account deleted" }).waitFor();
  await noError(page, "delete");
  assert.equal(await gqlError("query ($id: ID!) { user(id: $id) { id } }", { id: goneId }), "USER_NOT_FOUND", "the deleted account through the API");
  console.log(`ok: ${GONE_EMAIL} deleted from the page, unknown to the API`);

  // ---- A guest: named "guest <id>", deleted by typing its id ----
  // Searching "guest" never matches its placeholder address; the guest
  // filter lists it, by that name.
  const guestName = `guest ${GUEST_ID}`;
  await page.evaluate(() => { location.hash = `#/users/${encodeURIComponent("query=guest")}`; });
  await page.locator("#users").getByText("No account matches.").waitFor();
  await noError(page, "searching guest");
  await page.evaluate(() => { location.hash = `#/users/${encodeURIComponent("guest=yes")}`; });
  await page.locator("#users a.user-link", { hasText: guestName }).click();
  await page.locator("#user-email", { hasText: guestName }).waitFor();
  assert.equal(decodeURIComponent(page.url().split("#/user/")[1]), GUEST_ID, "the guest's page");
  const guestDelete = page.getByRole("button", { name: "Delete account" });
  const guestConfirm = page.getByLabel(`Type ${GUEST_ID} to confirm`);
  await guestConfirm.fill(guestName);
  assert.ok(await guestDelete.isDisabled(), "a guest's delete enabled with its name typed, not its id");
  await guestConfirm.fill(GUEST_ID);
  assert.ok(await guestDelete.isEnabled(), "a guest's delete not enabled with its id typed");
  await guestDelete.click();
  await page.getByRole("heading", { name: "Account deleted" }).waitFor();
  await noError(page, "delete a guest");
  assert.equal(await gqlError("query ($id: ID!) { user(id: $id) { id } }", { id: GUEST_ID }), "USER_NOT_FOUND", "the deleted guest through the API");
  await page.evaluate(() => { location.hash = `#/users/${encodeURIComponent("guest=yes")}`; });
  await page.locator("#users").getByText("No account matches.").waitFor();
  console.log(`ok: ${guestName} listed by the guest filter only, named so on its page, deleted by typing its id, gone`);

  // ---- Sign out: the session's refresh token is refused ----
  await page.evaluate(() => { location.hash = "#/overview"; });
  await page.locator("#overview[data-loaded]").waitFor();
  const last = await refreshTokens.at(-1);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.locator("form.signin", { hasText: "You are signed out." }).waitFor();
  const after = await refresh(last);
  assert.equal(after.status, 401, `the refresh token after sign-out: ${JSON.stringify(after.body)}`);
  assert.equal(after.body.success, false);
  console.log(`ok: signed out; the old refresh token is refused (${after.body.error.code})`);

  // ---- Passkeys: Chromium's virtual authenticator (DevTools WebAuthn) ----
  // A platform authenticator holding discoverable credentials, verifying
  // its user, that answers without a prompt.
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  await page.goto(`${passkeyBase}/console/#/signin`, { waitUntil: "load" });
  await signIn(page, ADMIN_EMAIL);
  await page.locator("#overview[data-loaded]").waitFor();
  // Register one from "My account".
  await page.getByRole("link", { name: "My account", exact: true }).click();
  await page.locator('#passkeys[data-loaded="0"]').waitFor();
  await page.getByLabel("Passkey name").fill("CI Chromium");
  await page.getByRole("button", { name: "Register a passkey" }).click();
  await page.locator('#passkeys[data-loaded="1"]').waitFor();
  await noError(page, "passkey registration");
  const myKeys = `query { myPasskeys { id name lastUsedAt } }`;
  let { myPasskeys: keys } = await gql(myKeys);
  assert.deepEqual(keys.map((k) => k.name), ["CI Chromium"], "the passkey through the API");
  assert.equal(keys[0].lastUsedAt, null);
  const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  assert.equal(credentials.length, 1, "credentials in the virtual authenticator");
  assert.ok(credentials[0].isResidentCredential, "the credential is discoverable");
  assert.equal(credentials[0].rpId, new URL(passkeyBase).hostname);
  console.log(`ok: a passkey registered from the page (${credentials[0].rpId}, discoverable), listed by the API`);

  // Sign out, then in with the passkey alone: no email, no password.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.locator("form.signin", { hasText: "You are signed out." }).waitFor();
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await page.locator("#overview[data-loaded]").waitFor();
  await noError(page, "passkey sign-in");
  assert.equal(await page.locator("#who").innerText(), ADMIN_EMAIL, "signed in as the passkey's account");
  ({ myPasskeys: keys } = await gql(myKeys));
  assert.ok(keys[0].lastUsedAt, "the passkey's last use after the sign-in");
  const signCount = (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials[0].signCount;
  assert.ok(signCount >= 1, `the authenticator signed (count ${signCount})`);
  console.log(`ok: signed in with the passkey alone (signature counter ${signCount})`);

  // The password now needs the passkey as its second step.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.locator("form.signin", { hasText: "You are signed out." }).waitFor();
  await signIn(page, ADMIN_EMAIL);
  await page.locator("#overview[data-loaded]").waitFor();
  await noError(page, "password and passkey");
  const after2 = (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials[0].signCount;
  assert.ok(after2 > signCount, `the second step signed again (count ${signCount} then ${after2})`);
  console.log("ok: a password sign-in answered MFA_REQUIRED and the page completed it with the passkey");

  // Remove it (the session is at aal2): the password alone signs in again.
  await page.getByRole("link", { name: "My account", exact: true }).click();
  await page.locator('#passkeys[data-loaded="1"]').waitFor();
  await page.locator("#passkeys tr", { hasText: "CI Chromium" }).getByRole("button", { name: "Remove" }).click();
  await page.getByRole("button", { name: "Yes, remove it" }).click();
  await page.locator('#passkeys[data-loaded="0"]').waitFor();
  await noError(page, "passkey removal");
  ({ myPasskeys: keys } = await gql(myKeys));
  assert.deepEqual(keys, [], "no passkey left through the API");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.locator("form.signin", { hasText: "You are signed out." }).waitFor();
  await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
  console.log("ok: the passkey removed from the page; none left");

  // ---- An operator with an authenticator app: the code after the password ----
  secondSteps.splice(0); // the passkey second step above was another operator's
  await signIn(page, TOTP_EMAIL);
  const codeIn = page.getByLabel("Code", { exact: true });
  await shown(codeIn, "the second step's code field after the password of an operator with TOTP");
  assert.ok(await page.locator("#nav").isHidden(), "navigation shown before the second step");
  // A wrong code (none of the three steps the server accepts): refused, the step stays.
  const now = Date.now();
  const near = new Set([-1, 0, 1].map((k) => totp(TOTP_SECRET, now + k * 30_000)));
  let wrong = 0;
  while (near.has(String(wrong).padStart(6, "0"))) wrong++;
  await codeIn.fill(String(wrong).padStart(6, "0"));
  await page.getByRole("button", { name: "Verify" }).click();
  await shown(page.locator('#error[data-code="MFA_CODE_INVALID"]'), "MFA_CODE_INVALID shown for a wrong code");
  await shown(codeIn, "the code field still there after a wrong code");
  assert.equal(await codeIn.inputValue(), "", "the wrong code left in the field");
  assert.equal(secondSteps.length, 0, "a wrong code gave a session");
  // The code of now, computed here as an app would.
  await codeIn.fill(totp(TOTP_SECRET, Date.now()));
  await page.getByRole("button", { name: "Verify" }).click();
  await shown(page.locator("#overview[data-loaded]"), "the overview after the TOTP code");
  await noError(page, "TOTP sign-in");
  assert.equal(await page.locator("#who").innerText(), TOTP_EMAIL, "signed in as the TOTP operator");
  assert.equal(secondSteps.length, 1, "sessions from the second step");
  let c = claims(await secondSteps[0]);
  assert.equal(c.aal, "aal2", `the TOTP session's aal: ${JSON.stringify(c)}`);
  assert.deepEqual(c.amr, ["pwd", "otp"], `the TOTP session's amr: ${JSON.stringify(c)}`);
  console.log(`ok: ${TOTP_EMAIL} signed in with the password and an authenticator code (a wrong one refused first): ${c.aal}, amr ${c.amr}`);
  await page.getByRole("button", { name: "Sign out" }).click();
  await shown(page.locator("form.signin", { hasText: "You are signed out." }), "the sign-in form after signing out");
  // A recovery code instead: used once, one fewer left.
  await signIn(page, TOTP_EMAIL);
  await shown(codeIn, "the second step's code field again");
  await codeIn.fill(recoveryCodes[0]);
  await page.getByRole("button", { name: "Verify" }).click();
  await shown(page.locator("#overview[data-loaded]"), "the overview after the recovery code");
  await noError(page, "recovery code sign-in");
  assert.equal(secondSteps.length, 2, "sessions from the second step");
  c = claims(await secondSteps[1]);
  assert.equal(c.aal, "aal2", `the recovery session's aal: ${JSON.stringify(c)}`);
  assert.deepEqual(c.amr, ["pwd", "recovery"], `the recovery session's amr: ${JSON.stringify(c)}`);
  const { user: totpUser } = await gql("query ($email: String!) { user(email: $email) { id } }", { email: TOTP_EMAIL });
  const { userMfa } = await gql("query ($userId: ID!) { userMfa(userId: $userId) { enabled recoveryCodesLeft } }", { userId: totpUser.id });
  assert.deepEqual(userMfa, { enabled: true, recoveryCodesLeft: 9 }, "the TOTP operator's factors after a recovery code");
  console.log(`ok: ${TOTP_EMAIL} signed in with a recovery code (${c.amr}); ${userMfa.recoveryCodesLeft} left, as the API says`);
  // A passkey too (the session is at aal2): the second step offers it
  // beside the code, and it completes the sign-in.
  const { authenticatorId: totpAuthenticator } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  await page.getByRole("link", { name: "My account", exact: true }).click();
  await shown(page.locator('#passkeys[data-loaded="0"]'), "the TOTP operator's passkeys (none yet)");
  await page.getByLabel("Passkey name").fill("TOTP operator's key");
  await page.getByRole("button", { name: "Register a passkey" }).click();
  await shown(page.locator('#passkeys[data-loaded="1"]'), "the TOTP operator's passkey, registered");
  await page.getByRole("button", { name: "Sign out" }).click();
  await shown(page.locator("form.signin", { hasText: "You are signed out." }), "the sign-in form after signing out");
  await signIn(page, TOTP_EMAIL);
  await shown(codeIn, "the code field for an account with TOTP and a passkey");
  await page.getByRole("button", { name: "Use a passkey instead" }).click();
  await shown(page.locator("#overview[data-loaded]"), "the overview after the passkey instead of a code");
  await noError(page, "passkey instead of a code");
  assert.equal(secondSteps.length, 3, "sessions from the second step");
  c = claims(await secondSteps[2]);
  assert.deepEqual([c.aal, c.amr], ["aal2", ["pwd", "webauthn"]], `the passkey second step's session: ${JSON.stringify(c)}`);
  console.log(`ok: ${TOTP_EMAIL}, with a passkey too, completed the second step with it instead of a code (${c.amr})`);
  // The operator's passkey on its user page, as the API lists it, and an
  // admin's removal there, which the user's security log records with
  // the operator as the actor.
  await page.evaluate((uid) => { location.hash = `#/user/${encodeURIComponent(uid)}`; }, totpUser.id);
  const listed = page.locator("#user-passkeys tbody tr");
  await shown(listed.filter({ hasText: "TOTP operator's key" }), "the passkey on the user page");
  assert.equal(await listed.count(), 1, "passkeys on the user page");
  let { userPasskeys } = await gql("query ($userId: ID!) { userPasskeys(userId: $userId) { id name } }", { userId: totpUser.id });
  assert.deepEqual(userPasskeys.map((p) => p.name), ["TOTP operator's key"], "the user's passkeys through the API");
  await page.getByRole("button", { name: "Remove passkey TOTP operator's key" }).click();
  await shown(page.locator("p#user-passkeys", { hasText: "No passkey registered." }), "no passkey left on the user page");
  await noError(page, "an admin's passkey removal");
  ({ userPasskeys } = await gql("query ($userId: ID!) { userPasskeys(userId: $userId) { id } }", { userId: totpUser.id }));
  assert.deepEqual(userPasskeys, [], "the user's passkeys through the API after the removal");
  const { userSecurityLog: removedLog } = await gql(`query ($userId: ID!) { userSecurityLog(userId: $userId, first: 5) { nodes { kind actor } } }`, { userId: totpUser.id });
  const removedEntry = removedLog.nodes.find((e) => e.kind === "passkey_removed");
  assert.equal(removedEntry?.actor, `admin:${totpUser.id}`, `the removal's security log entry: ${JSON.stringify(removedLog.nodes)}`);
  console.log(`ok: the passkey listed on the user page as the API lists it, removed there (security log: ${removedEntry.kind} by ${removedEntry.actor})`);
  await page.getByRole("button", { name: "Sign out" }).click();
  await shown(page.locator("form.signin", { hasText: "You are signed out." }), "the sign-in form after signing out");

  // A second step whose challenge another client used first: back to the password.
  const loginAnswer = page.waitForResponse((r) => r.url().endsWith("/api/v1/auth/login"), { timeout: 15_000 });
  await signIn(page, TOTP_EMAIL);
  const challengeToken = (await (await loginAnswer).json()).error?.details?.challengeToken;
  assert.ok(challengeToken, "the login's MFA_REQUIRED carries no challengeToken");
  await shown(codeIn, "the code field before the challenge is used elsewhere");
  const elsewhere = await fetch(`${base}/api/v1/auth/login/mfa`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ challengeToken, code: recoveryCodes[1] }),
  });
  assert.equal(elsewhere.status, 200, `another client completing the challenge: ${JSON.stringify(await elsewhere.json())}`);
  await codeIn.fill(totp(TOTP_SECRET, Date.now()));
  await page.getByRole("button", { name: "Verify" }).click();
  await shown(page.locator('#error[data-code="MFA_CHALLENGE_INVALID"]'), "MFA_CHALLENGE_INVALID shown for a used challenge");
  await shown(page.locator("form.signin", { hasText: "That second step has ended" }), "the password form again, saying why");
  assert.ok(await page.locator("#nav").isHidden(), "navigation shown after a used challenge");
  assert.equal(secondSteps.length, 3, "the page got a session from a used challenge");
  await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId: totpAuthenticator });
  console.log("ok: a second step whose challenge was used elsewhere is refused (MFA_CHALLENGE_INVALID) and goes back to the password");

  // ---- No CSP violation, no uncaught error, all along ----
  assert.deepEqual(pageErrors, [], "uncaught errors in the page");
  assert.deepEqual(violations, [], "CSP violations");
  // The detector itself: an inline script must be reported.
  await page.evaluate(() => { const s = document.createElement("script"); s.textContent = "window.inlineRan = true"; document.body.append(s); });
  await page.waitForTimeout(200);
  assert.equal(await page.evaluate(() => window.inlineRan), undefined, "an inline script ran under the CSP");
  assert.ok(violations.length > 0, "the CSP violation probe was not reported: the check would miss real ones");
  console.log("ok: no CSP violation during the run (an inline script added afterwards was blocked and reported)");
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}

async function signIn(page, email) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

// shown waits, at most 15 s, for a locator to be visible (or in another
// state), and fails saying what was awaited, with the page's error if it
// shows one.
async function shown(locator, what, state = "visible") {
  try {
    await locator.waitFor({ state, timeout: 15_000 });
  } catch (e) {
    const box = locator.page().locator("#error");
    const err = (await box.isVisible()) ? ` (the page shows: ${await box.innerText()})` : "";
    assert.fail(`not shown within 15 s: ${what}${err}: ${e.message.split("\n")[0]}`);
  }
}

// noError fails when the page shows an API error, or a value the code
// failed to turn into text.
async function noError(page, where) {
  const box = page.locator("#error");
  if (await box.isVisible()) assert.fail(`${where}: the page shows an error: ${await box.innerText()}`);
  const text = await page.locator("body").innerText();
  const bad = text.match(/.{0,40}\b(null|undefined|NaN)\b.{0,40}|.{0,40}\[object \w+\].{0,40}/);
  assert.equal(bad, null, `${where}: the page shows ${bad?.[0]}`);
}

async function shot(page, name) {
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}
