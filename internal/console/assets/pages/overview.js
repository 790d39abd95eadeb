// Overview: the service at a glance, from one adminOverview query, read
// again every 15 seconds while the page is open.
import * as api from "../api.js";
import { h, guard, facts, badge } from "../ui.js";

const QUERY = `query {
  adminOverview {
    version
    accounts { total verified newLast24h disabled }
    devices { total byPlatform { platform count } tokensValid tokensInvalid tokensMissing }
    broadcasts { running queued scheduled messengerRunning }
    bot { connected botUsername subscriberCount }
    webhooks { total failing disabled }
    rateLimiter { backend degraded reason }
  }
}`;

const REFRESH_MS = 15_000;

function card(title, big, body, link) {
  return h("section", { class: "card", "aria-label": title },
    h("h2", {}, link ? h("a", { href: link }, title) : title),
    big !== null ? h("p", { class: "big" }, big) : null,
    body);
}

function cards(o) {
  const d = o.devices;
  const platforms = d.byPlatform.length
    ? d.byPlatform.map((p) => [p.platform, p.count])
    : [["platforms", "none yet"]];
  const b = o.broadcasts;
  const rl = o.rateLimiter;
  return [
    card("Accounts", o.accounts.total, facts([
      ["Verified", o.accounts.verified],
      ["New in 24 h", o.accounts.newLast24h],
      ["Disabled", o.accounts.disabled],
    ]), "#/users"),
    card("Devices", d.total, facts([
      ...platforms,
      ["Tokens valid", d.tokensValid],
      ["Tokens invalid", d.tokensInvalid > 0 ? badge(String(d.tokensInvalid), "warn") : 0],
      ["Tokens missing", d.tokensMissing],
    ])),
    card("Broadcasts", null, facts([
      ["Running", b.running > 0 ? badge(String(b.running), "ok") : 0],
      ["Queued", b.queued],
      ["Scheduled", b.scheduled],
      ["Messenger running", b.messengerRunning],
    ]), "#/broadcasts"),
    card("Telegram bot", null, facts([
      ["Status", o.bot.connected ? badge("connected", "ok") : badge("not connected", "warn")],
      ["Bot", o.bot.botUsername ? `@${o.bot.botUsername}` : "—"],
      ["Subscribers", o.bot.subscriberCount],
    ]), "#/messenger"),
    card("Webhooks", null, facts([
      ["Endpoints", o.webhooks.total],
      ["Failing", o.webhooks.failing > 0 ? badge(String(o.webhooks.failing), "bad") : 0],
      ["Disabled", o.webhooks.disabled > 0 ? badge(String(o.webhooks.disabled), "warn") : 0],
    ]), "#/webhooks"),
    card("Rate limiter", null, facts([
      ["Backend", rl.backend],
      ["Mode", rl.degraded ? badge("degraded", "bad") : badge("normal", "ok")],
      ["Why", rl.degraded ? (rl.reason || "—") : null],
    ])),
    card("Version", null, h("p", { class: "mono" }, o.version)),
  ];
}

export async function render(main) {
  const grid = h("div", { class: "cards", id: "overview" });
  const stamp = h("span", { class: "muted" });
  const again = h("button", { type: "button", class: "secondary" }, "Refresh");
  main.append(h("div", { class: "title-row" }, h("h1", {}, "Overview"), h("div", { class: "actions" }, stamp, again)), grid);

  async function load(button) {
    await guard(async () => {
      const { adminOverview } = await api.gql(QUERY);
      grid.replaceChildren(...cards(adminOverview));
      grid.dataset.loaded = "true";
      stamp.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    }, button);
  }
  again.addEventListener("click", () => load(again));
  await load();
  const timer = setInterval(() => load(), REFRESH_MS);
  return () => clearInterval(timer);
}
