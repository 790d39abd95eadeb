// The console's operator pages in a real browser (TestConsoleOps): Debian's
// Chromium, headless, driven by playwright-core, signs in as an admin and
// works the Messenger, API keys, Webhooks and Bans pages the way an
// operator would, checking what reaches the fake Telegram and the webhook
// receiver through the test's control server (CONTROL_URL). Any Content
// Security Policy violation or uncaught page error fails it. Screenshots of
// each page at 1280 and 390 px go to SHOTS. Exits non-zero, saying why,
// otherwise.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const base = process.env.HERALD_URL;
const env = (k) => {
  assert.ok(process.env[k], `${k} not set`);
  return process.env[k];
};
const [email, password, chatId, chats, missingChat, control, hookURL, shots, cliKeyID] =
  ["EMAIL", "PASSWORD", "CHAT_ID", "CHATS", "MISSING_CHAT", "CONTROL_URL", "HOOK_URL", "SHOTS", "CLI_KEY_ID"].map(env);

const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
// As in cors_browser.mjs: no background networking (no outside network).
const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const deadline = 30_000; // any one browser step, in ms
const wide = { width: 1280, height: 900 };
const narrow = { width: 390, height: 844 };

const violations = []; // CSP violations: events and console messages
const pageErrors = [];
const sockets = [];

const userDataDir = mkdtempSync(join(tmpdir(), "herald-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, { executablePath, headless: true, args, timeout: 60_000, viewport: wide });
try {
  context.setDefaultTimeout(deadline);
  const page = context.pages()[0] ?? (await context.newPage());
  await page.exposeFunction("reportCSPViolation", (v) => violations.push(v));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      window.reportCSPViolation({ directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber, sample: e.sample }));
  });
  page.on("console", (m) => {
    console.log(`[page] ${m.type()}: ${m.text()}`);
    if (/Content Security Policy|Refused to (load|execute|apply|connect|frame)/i.test(m.text())) violations.push({ console: m.text() });
  });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("websocket", (ws) => sockets.push(ws.url()));

  await signIn(page);
  await messenger(page);
  await apiKeys(page);
  await webhooks(page);
  await bans(page);
  await narrowPages(page);

  assert.deepEqual(pageErrors, [], "uncaught errors in the page");
  assert.deepEqual(violations, [], "Content Security Policy violations");
  console.log("ok: messenger, API keys, webhooks and bans worked in Chromium under the console's CSP");
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}

async function signIn(page) {
  const resp = await page.goto(`${base}/console/`);
  assert.match(resp.headers()["content-security-policy"] ?? "", /script-src 'self'/, "the console is served with its CSP");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.locator("#nav").waitFor({ state: "visible" });
}

// open routes to a page and waits for its heading.
async function open(page, hash, title) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.getByRole("heading", { level: 1, name: title, exact: true }).waitFor();
}

async function shot(page, name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

// shownError waits for the alert area to show an API error and returns
// its code and text.
async function shownError(page) {
  const box = page.locator("#error");
  await box.waitFor({ state: "visible" });
  const code = await box.getAttribute("data-code");
  const text = await box.textContent();
  assert.ok(code && text.startsWith(`${code}: `) && text.length > code.length + 3, `the error shows a code and a message: ${text}`);
  return { code, text };
}

async function sentTo(chat) {
  return (await fetch(`${control}/telegram/sent?chat=${encodeURIComponent(chat)}`)).json();
}

async function eventually(what, cond, ms = 20_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function messenger(page) {
  await open(page, "#/messenger", "Messenger");
  // Newest first, 20 a page: the first chat is on the second page.
  await page.locator("tbody tr").nth(19).waitFor();
  await page.getByRole("button", { name: "Load more" }).click();
  await page.locator("tr", { hasText: chatId }).waitFor();
  assert.equal(await page.locator("tbody tr").count(), Number(chats), "every chat, over two pages");
  assert.equal(await page.getByTestId("subscriber-count").textContent(), chats, "subscribed chats");
  const status = page.getByRole("combobox", { name: /^Status/ });
  await status.selectOption("blocked");
  await page.getByText("No blocked chats.").waitFor();
  await status.selectOption("subscribed");
  await page.locator("tbody tr").nth(19).waitFor();
  assert.deepEqual([...new Set(await page.locator("tbody .badge").allTextContents())], ["subscribed"], "only subscribed chats");

  await sanitizer(context);

  // A Markdown message: the preview shows what Telegram will show.
  const md = "**Price:** 4.99 (50% off!) & <b>not a tag</b>\n`snake_case` *italic* ~~old~~ [our site](https://example.com/a_b?x=1&y=2)\n```\nline 1\n  <line 2>\n```";
  await page.getByLabel("Message (Markdown)").fill(md);
  await page.getByLabel("Silent").check();
  await page.getByRole("button", { name: "Add a button" }).click();
  await page.getByLabel("Button 1 text").fill("Open");
  await page.getByLabel("Button 1 URL").fill("https://example.com/open");
  await page.getByLabel("Chat id").fill(chatId);
  await page.locator("[data-testid=preview][data-ready=true]").waitFor();
  const preview = await page.getByTestId("preview").evaluate((el) => ({
    text: el.textContent,
    tags: [...new Set([...el.querySelectorAll("*")].map((e) => e.localName))].sort(),
    links: [...el.querySelectorAll("a")].map((a) => a.href),
  }));
  assert.deepEqual(preview.tags, ["a", "b", "code", "i", "pre", "s"], `the preview's elements: ${JSON.stringify(preview)}`);
  assert.deepEqual(preview.links, ["https://example.com/a_b?x=1&y=2"]);
  assert.ok(preview.text.includes("<b>not a tag</b>"), "typed markup is text");
  await page.locator(".tg-buttons span", { hasText: "Open" }).waitFor();
  await shot(page, "messenger");

  await page.getByRole("button", { name: "Send to chat" }).click();
  await page.getByText(`Sent to chat ${chatId}`).waitFor();
  const sent = (await sentTo(chatId)).at(-1);
  assert.ok(sent, "the fake Telegram got the message");
  assert.equal(preview.text, sent.visible, "the preview's text is what Telegram shows");
  assert.equal(await page.getByTestId("length").textContent(), `${sent.visible.length} / 4096`, "the length counter");
  assert.equal(sent.silent, true, "silent");
  assert.deepEqual(sent.buttons, [[{ text: "Open", url: "https://example.com/open" }]], "the inline button");

  // Telegram's refusal is shown with Herald's code.
  await page.getByLabel("Chat id").fill(missingChat);
  await page.getByRole("button", { name: "Send to chat" }).click();
  const sendErr = await shownError(page);
  assert.equal(sendErr.code, "CHAT_NOT_FOUND", "a chat Telegram does not know");

  // A broadcast to every subscriber, followed live to its end.
  await page.getByLabel("Message (Markdown)").fill("Broadcast from the console: **all** chats");
  await page.getByRole("button", { name: "Broadcast to every subscriber" }).click();
  await page.getByRole("button", { name: "Yes, broadcast" }).click();
  const card = page.locator(".broadcast");
  await card.waitFor();
  await page.locator(".broadcast[data-status=completed]").waitFor();
  assert.equal(await card.locator("[data-count=sent]").textContent(), chats, "every chat sent");
  assert.equal(await card.locator("[data-count=recipients]").textContent(), chats, "recipients");
  const cardText = await card.textContent();
  assert.ok(!cardText.includes("live updates lost"), "followed over the subscription to the end");
  assert.doesNotMatch(cardText, /null|undefined|NaN/, "the card shows no missing value");
  assert.ok(sockets.some((u) => new URL(u).pathname === "/graphql"), `a WebSocket to /graphql: ${sockets}`);
  assert.equal(await page.locator(".broadcast .confirm").isVisible(), false, "no cancel button once it is finished");

  // A second broadcast, held on its first chat by a 429 from Telegram, is
  // cancelled from its card: it stops before its second batch.
  const held = await fetch(`${control}/telegram/hold?chat=${chatId}&seconds=6`, { method: "POST" });
  assert.equal(held.status, 204);
  await page.getByLabel("Message (Markdown)").fill("A broadcast to cancel");
  await page.getByRole("button", { name: "Broadcast to every subscriber" }).click();
  await page.getByRole("button", { name: "Yes, broadcast" }).click();
  const second = page.locator(".broadcast").first(); // the newest card is on top
  await page.locator(".broadcast").nth(1).waitFor();
  await second.getByRole("button", { name: "Cancel broadcast" }).click();
  await second.getByRole("button", { name: "Yes, cancel it" }).click();
  await second.and(page.locator("[data-status=cancelled]")).waitFor();
  const sentBeforeCancel = Number(await second.locator("[data-count=sent]").textContent());
  assert.ok(sentBeforeCancel < Number(chats), `a cancelled broadcast sent ${sentBeforeCancel} of ${chats}`);
  assert.equal(await second.locator(".confirm").isVisible(), false, "no cancel button once it is cancelled");
  console.log(`the cancelled broadcast sent ${sentBeforeCancel} of ${chats}`);
  await shot(page, "messenger-broadcast");
}

// sanitizer gives the preview's renderer hostile HTML: it keeps only
// Telegram's tags and safe links, and every character of the text. It runs
// in a tab of its own, since parsing such markup makes Chromium report the
// inline handlers and styles it blocked there (the CSP at work, and no
// violation by the console's own code, which the main tab checks).
async function sanitizer(context) {
  const tab = await context.newPage();
  const blocked = [];
  tab.on("console", (m) => blocked.push(m.text()));
  await tab.goto(`${base}/console/`);
  const out = await tab.evaluate(async () => {
    const { telegramFragment } = await import("/console/tghtml.js");
    const out = {};
    for (const [name, html] of Object.entries({
      xml: `<b>bold</b><a href="javascript:alert(1)">js</a><img src="x" onerror="window.pwned=1"/><i style="color:red">it</i><pre>\nkept</pre><a href="tg://resolve?domain=x">tg</a><script>window.pwned=2</script><u>u</u>`,
      html: `<b>bold<img src=x onerror="window.pwned=3"><script>window.pwned=4</script><a href="https://example.com/">ok</a><iframe src="https://example.com/"></iframe>`,
    })) {
      const div = document.createElement("div");
      div.append(telegramFragment(html));
      document.body.append(div);
      out[name] = div.innerHTML;
      div.remove();
    }
    await new Promise((r) => setTimeout(r, 200));
    out.pwned = window.pwned ?? null;
    return out;
  });
  await tab.close();
  assert.equal(out.xml, `<b>bold</b>js<i>it</i><pre>\nkept</pre><a href="tg://resolve?domain=x" rel="noopener noreferrer" target="_blank">tg</a>u`, "well-formed input");
  assert.equal(out.html, `<b>bold<a href="https://example.com/" rel="noopener noreferrer" target="_blank">ok</a></b>`, "tag soup: no img, script or iframe");
  assert.equal(out.pwned, null, "no handler or script of the HTML ran");
  console.log(`the renderer kept only Telegram's tags; Chromium blocked and reported: ${JSON.stringify(blocked.filter((t) => /Content Security Policy/.test(t)).map((t) => t.slice(0, 40)))}`);
}

async function apiKeys(page) {
  await open(page, "#/apikeys", "API keys");
  // The operators' log: the key made and revoked at the command line.
  const opLog = page.locator("#operator-log tbody tr", { hasText: cliKeyID });
  await opLog.filter({ hasText: "api_key_revoked" }).waitFor();
  assert.equal(await opLog.count(), 2, "the command line key's entries in the operators' log");
  for (const kind of ["api_key_created", "api_key_revoked"]) {
    assert.match(await opLog.filter({ hasText: kind }).innerText(), /\bcli\b/, `${kind} by cli`);
  }
  console.log(`ok: the operators' log shows ${cliKeyID} made and revoked at the command line (actor cli)`);
  await page.getByLabel("Name", { exact: true }).fill("ops-test");
  await page.getByRole("button", { name: "Create key" }).click();
  const noScope = await shownError(page);
  assert.equal(noScope.code, "VALIDATION_ERROR", "a key without scopes");

  await page.getByLabel("webhooks:manage").check();
  await page.getByLabel("Rate limit").fill("120");
  await page.getByLabel("Expires").fill("2099-12-31T12:00");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = await page.locator(".secret-value").inputValue();
  assert.match(key, /^hk_[0-9a-f]{16}_[0-9A-Za-z]{43}$/, "the key is shown");
  await page.getByText("Herald never shows it again").waitFor();
  await shot(page, "apikeys");

  const call = async () => {
    const r = await fetch(`${base}/api/v1/webhooks`, { headers: { "X-API-Key": key } });
    return { status: r.status, body: await r.json() };
  };
  const ok = await call();
  assert.equal(ok.status, 200, `the new key works: ${JSON.stringify(ok.body)}`);

  await page.getByRole("button", { name: "Done" }).click();
  assert.ok(!(await page.content()).includes(key), "the key is gone from the page after Done");

  const row = page.locator("tr", { hasText: "ops-test" });
  await row.getByRole("button", { name: "Revoke" }).click();
  await row.getByRole("button", { name: "Yes, revoke" }).click();
  await page.locator("tr", { hasText: "ops-test" }).getByText("revoked", { exact: true }).waitFor();
  const refused = await call();
  assert.equal(refused.status, 401, "the revoked key is refused");
  assert.equal(refused.body.error?.code, "TOKEN_INVALID", "the revoked key's error");
}

async function webhooks(page) {
  await open(page, "#/webhooks", "Webhooks");
  await page.getByLabel("URL", { exact: true }).fill(hookURL);
  await page.getByLabel("Description").fill("console test receiver");
  await page.getByLabel("user.created").check();
  await page.getByRole("button", { name: "Create endpoint" }).click();
  const secret = await page.locator(".secret-value").inputValue();
  assert.match(secret, /^whsec_/, "the signing secret is shown");
  await page.locator("tr", { hasText: hookURL }).getByText("healthy").waitFor();
  await shot(page, "webhooks");

  await page.getByRole("link", { name: "Open it" }).click();
  await page.getByRole("heading", { level: 1, name: "Webhook endpoint" }).waitFor();
  await page.getByRole("button", { name: "Send a ping" }).click();
  const row = page.locator("tbody tr", { hasText: "webhook.ping" }).first();
  await row.waitFor({ timeout: 20_000 });
  const eventId = (await row.locator("code").textContent()).trim();
  const received = async () => (await (await fetch(`${control}/hooks`)).json()).filter((h) => h.id === eventId && h.type === "webhook.ping").length;
  assert.equal(await received(), 1, "the receiver got the ping the page lists");

  await row.getByRole("button", { name: "Redeliver" }).click();
  await page.getByText(`Event ${eventId} queued for delivery again`).waitFor();
  await eventually("the redelivered ping arrives", async () => (await received()) === 2);
  await page.locator("tbody tr", { hasText: eventId }).nth(1).waitFor({ timeout: 20_000 }); // the page lists both attempts

  await page.getByRole("button", { name: "Disable" }).click();
  await page.locator(".card").getByText("disabled", { exact: true }).waitFor();
  await page.getByRole("button", { name: "Enable" }).click();
  await page.locator(".card").getByText("healthy", { exact: true }).waitFor();

  await page.getByRole("button", { name: "Rotate secret" }).click();
  await page.getByRole("button", { name: "Yes, rotate" }).click();
  await page.getByRole("heading", { name: "New signing secret" }).waitFor();
  const rotated = await page.locator(".secret-value").inputValue();
  assert.match(rotated, /^whsec_/);
  assert.notEqual(rotated, secret, "a new secret");
  await page.getByText("Previous secret signs until").waitFor();
  await shot(page, "webhook-endpoint");

  await page.getByRole("button", { name: "Delete" }).click();
  await page.getByRole("button", { name: "Yes, delete" }).click();
  await page.getByRole("heading", { level: 1, name: "Webhooks", exact: true }).waitFor();
  await page.getByText("No endpoints yet.").waitFor();

  // An endpoint answering 500: its failed attempt is listed, and the
  // endpoint shows as failing.
  const failingURL = new URL("/failing", hookURL).href;
  await page.getByLabel("URL", { exact: true }).fill(failingURL);
  await page.getByLabel("user.deleted").check();
  await page.getByRole("button", { name: "Create endpoint" }).click();
  await page.getByRole("link", { name: "Open it" }).click();
  await page.getByRole("button", { name: "Send a ping" }).click();
  const failed = page.locator("tbody tr", { hasText: "webhook.ping" }).first();
  await failed.getByText("failed", { exact: true }).waitFor({ timeout: 20_000 });
  assert.match(await failed.textContent(), /500/, "the receiver's status is listed");
  await page.getByRole("link", { name: "← All endpoints" }).click();
  await page.locator("tr", { hasText: failingURL }).getByText("failing", { exact: true }).waitFor();
  await page.getByRole("link", { name: failingURL }).click();
  await page.getByRole("button", { name: "Delete" }).click();
  await page.getByRole("button", { name: "Yes, delete" }).click();
  await page.getByText("No endpoints yet.").waitFor();
}

async function bans(page) {
  await open(page, "#/bans", "Bans");
  await page.getByLabel("IP address").fill("not-an-address");
  await page.getByRole("button", { name: "Ban", exact: true }).click();
  const bad = await shownError(page);
  console.log(`banning a malformed address shows ${bad.text}`);

  const ip = "203.0.113.9";
  await page.getByLabel("IP address").fill(ip);
  await page.getByLabel("Reason").fill("console test");
  await page.getByRole("button", { name: "Ban", exact: true }).click();
  const row = page.locator("tr", { hasText: ip });
  await row.getByText("console test").waitFor();
  await shot(page, "bans");
  await row.getByRole("button", { name: "Lift" }).click();
  await row.getByRole("button", { name: "Yes, lift it" }).click();
  await page.getByText("No address is banned.").waitFor();
}

// narrowPages opens each page on a phone-sized screen: nothing wider than
// the screen (tables scroll in their own box).
async function narrowPages(page) {
  await page.setViewportSize(narrow);
  for (const [hash, title, name] of [["#/messenger", "Messenger", "messenger"], ["#/apikeys", "API keys", "apikeys"], ["#/webhooks", "Webhooks", "webhooks"], ["#/bans", "Bans", "bans"]]) {
    await open(page, hash, title);
    await page.waitForLoadState("networkidle");
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= narrow.width, `${title} at ${narrow.width} px is ${width} px wide`);
    await shot(page, `${name}-390`);
  }
  await page.setViewportSize(wide);
}
