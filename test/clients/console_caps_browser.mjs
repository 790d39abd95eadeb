// The console against a server with passkeys off and product capped at 2
// a day (TestConsoleCapsAndPasskeysOff): Debian's Chromium, headless,
// driven by playwright-core, at http://localhost (a secure context, where
// the browser could use a passkey), every value the page shows compared
// with the API read with ADMIN_TOKEN. Any Content Security Policy
// violation or uncaught page error fails it. Exits non-zero, saying why,
// otherwise.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const api = process.env.HERALD_URL;
const { ADMIN_EMAIL, ADMIN_TOKEN, PASSWORD, USER_ID, JOB_ID, EMAIL_JOB_ID, CONSOLE_URL } = process.env;
for (const [k, v] of Object.entries({ api, ADMIN_EMAIL, ADMIN_TOKEN, PASSWORD, USER_ID, JOB_ID, EMAIL_JOB_ID, CONSOLE_URL })) assert.ok(v, `${k} not set`);
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

async function gql(query, variables = {}) {
  const resp = await fetch(`${api}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await resp.json();
  assert.ok(!body.errors, `API: ${JSON.stringify(body.errors)}`);
  return body.data;
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

async function noError(page, where) {
  const box = page.locator("#error");
  if (await box.isVisible()) assert.fail(`${where}: the page shows an error: ${await box.innerText()}`);
}

const violations = [];
const pageErrors = [];
const userDataDir = mkdtempSync(join(tmpdir(), "herald-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, { executablePath, headless: true, args, timeout: 60_000 });
try {
  context.setDefaultTimeout(30_000);
  await context.exposeBinding("heraldCSPViolation", (_source, v) => violations.push(v));
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.heraldCSPViolation({ directive: e.violatedDirective, blocked: e.blockedURI });
    });
  });
  const page = context.pages()[0] ?? await context.newPage();
  page.on("console", (m) => {
    console.log(`[page] ${m.type()}: ${m.text()}`);
    if (/Content Security Policy|Content-Security-Policy/i.test(m.text())) violations.push({ console: m.text() });
  });
  page.on("pageerror", (e) => { console.log(`[page] uncaught: ${e.message}`); pageErrors.push(e.message); });

  // ---- Passkeys off: no passkey button, though the browser could ----
  const asked = page.waitForResponse((r) => r.url().endsWith("/api/v1/auth/methods"), { timeout: 15_000 })
    .catch(() => assert.fail("the sign-in page did not ask the server whether passkeys are on (GET /api/v1/auth/methods)"));
  await page.goto(`${CONSOLE_URL}/console/`, { waitUntil: "load" });
  await shown(page.locator("form.signin"), "the sign-in form");
  assert.equal(await page.evaluate(() => window.isSecureContext && typeof window.PublicKeyCredential === "function"), true,
    "the page at localhost can use passkeys (so only the server's answer hides the button)");
  const methods = await (await asked).json();
  assert.deepEqual(methods.data, { passkeys: false }, "GET /api/v1/auth/methods as the page read it");
  // The answer is applied as it arrives: give the page a moment to act on it.
  await page.waitForLoadState("networkidle");
  const passkeyButton = page.getByRole("button", { name: "Sign in with a passkey" });
  assert.equal(await passkeyButton.count(), 0, "no visible passkey button while passkeys are off on the server");
  console.log("ok: passkeys off on the server: the sign-in page at localhost has no passkey button");

  await page.getByLabel("Email").fill(ADMIN_EMAIL);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await shown(page.locator("#overview[data-loaded]"), "the overview after signing in");

  await page.getByRole("link", { name: "My account" }).click();
  await shown(page.locator("#passkeys-off"), "My account saying passkeys are off");
  assert.equal(await page.getByRole("button", { name: "Register a passkey" }).count(), 0, "no passkey registration while passkeys are off");
  await noError(page, "My account");
  console.log(`ok: My account says: ${await page.locator("#passkeys-off").innerText()}`);

  // ---- The user's page: each category's cap, and a capped test send ----
  await page.evaluate((id) => { location.hash = `#/user/${id}`; }, USER_ID);
  const { notificationCategories: catalogue } = await gql("{ notificationCategories { name capPerDay } }");
  const rows = page.locator("#preferences tbody tr");
  await shown(rows.first(), "the user's notification preferences");
  const caps = await rows.evaluateAll((trs) => trs.map((tr) => [tr.cells[0].innerText.split(/\s/)[0], tr.querySelector(".cap").dataset.cap, tr.querySelector(".cap").innerText]));
  assert.deepEqual(caps.map(([name, cap]) => [name, cap]), catalogue.map((c) => [c.name, c.capPerDay == null ? "" : String(c.capPerDay)]), "each category's cap against the catalogue");
  assert.deepEqual(caps.find(([name]) => name === "product"), ["product", "2", "2 a day"], "product's cap as shown");
  console.log(`ok: the user's page shows the categories' caps as the catalogue: ${caps.map(([n, , text]) => `${n} ${text}`).join(", ")}`);

  await page.getByRole("form", { name: "Send a test notification" }).getByLabel(/^Category/).selectOption("product");
  const sent = page.waitForResponse((r) => r.url().endsWith("/graphql") && (r.request().postData() ?? "").includes("sendNotificationToUser"));
  await page.getByRole("button", { name: "Send test" }).click();
  const { data: { sendNotificationToUser: r } } = await (await sent).json();
  assert.equal(r.skipped.capped, 1, `the third product send of the day skips the user's phone: ${JSON.stringify(r)}`);
  const capped = page.locator("#outcomes .capped");
  await shown(capped, "the capped skip of the test send");
  assert.match(await capped.innerText(), /^ ?1 skipped: the user already had today's 2 product sends/, "the capped skip as shown");
  await noError(page, "the user's page");
  console.log(`ok: a product test after the day's two: ${(await page.locator("#outcomes p").innerText()).trim()}`);

  // ---- Broadcasts: the cap in the category list, skipped.capped in the counters ----
  await page.getByRole("link", { name: "Broadcasts" }).click();
  const option = page.locator('select[name="category"] option[value="product"]');
  await shown(option, "product among the broadcast's categories", "attached");
  assert.equal(await option.innerText(), "product (at most 2 a day)", "the broadcast form names product's cap");
  const row = page.locator("#jobs tbody tr").filter({ has: page.locator(`.job[data-job="${JOB_ID}"]`) });
  await shown(row, "the product broadcast among the jobs");
  let job;
  for (const until = Date.now() + 30_000; ;) {
    ({ notificationJob: job } = await gql("query ($id: ID!) { notificationJob(id: $id) { status sent failed invalidTokens totalRecipients skipped { optedOut capped } } }", { id: JOB_ID }));
    if (job.status === "completed" && (await row.locator(".job-status").getAttribute("data-status")) === "completed") break;
    assert.ok(Date.now() < until, `the broadcast did not complete within 30 s, on the page or through the API: ${JSON.stringify(job)}`);
    await page.waitForTimeout(100);
  }
  const counters = await row.locator(".counters").evaluate((el) => ({ ...el.dataset }));
  assert.deepEqual(
    { sent: +counters.sent, optedOut: +counters.optedOut, capped: Number(counters.capped), total: +counters.total },
    { sent: job.sent, optedOut: job.skipped.optedOut, capped: job.skipped.capped, total: job.totalRecipients },
    "the job's counters against the API");
  assert.match(await row.locator(".counters").innerText(), new RegExp(`· ${job.skipped.capped} capped of ${job.totalRecipients}$`), "the capped counter as shown");
  await noError(page, "broadcasts");
  console.log(`ok: the broadcast's counters as the API: ${await row.locator(".counters").innerText()}`);

  // ---- A broadcast on push and email: its emails in the counters ----
  assert.equal(await page.locator('input[name="channels"][value="push"]').isChecked(), true, "push is ticked in the form");
  assert.equal(await page.locator('input[name="channels"][value="email"]').isChecked(), false, "email is not ticked in the form");
  const emailRow = page.locator("#jobs tbody tr").filter({ has: page.locator(`.job[data-job="${EMAIL_JOB_ID}"]`) });
  await shown(emailRow, "the broadcast by email among the jobs");
  let emailJob;
  for (const until = Date.now() + 30_000; ;) {
    ({ notificationJob: emailJob } = await gql("query ($id: ID!) { notificationJob(id: $id) { status channels email { queued optedOut capped noEmailAddress } } }", { id: EMAIL_JOB_ID }));
    if (emailJob.status === "completed" && (await emailRow.locator(".job-status").getAttribute("data-status")) === "completed") break;
    assert.ok(Date.now() < until, `the broadcast by email did not complete within 30 s: ${JSON.stringify(emailJob)}`);
    await page.waitForTimeout(100);
  }
  assert.ok(emailJob.email.queued > 0, `the broadcast queued emails: ${JSON.stringify(emailJob)}`);
  assert.equal(Number(await emailRow.locator(".counters").getAttribute("data-emailed")), emailJob.email.queued, "the emails queued against the API");
  assert.match(await emailRow.locator(".counters").innerText(), new RegExp(`emails: ${emailJob.email.queued} queued, ${emailJob.email.noEmailAddress} without an address`), "the emails as shown");
  console.log(`ok: the broadcast by email's counters: ${await emailRow.locator(".counters").innerText()}`);

  assert.deepEqual(violations, [], "Content Security Policy violations");
  assert.deepEqual(pageErrors, [], "uncaught errors in the page");
  console.log("ok: no CSP violation, no uncaught error");
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
