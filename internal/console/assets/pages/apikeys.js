// API keys: other services' credentials. A key's secret is in the create
// answer only; the list never shows one. Below them, the operators' log:
// keys made or revoked at the herald command line (an admin user's are in
// their own security log).
import { gql } from "../api.js";
import { h, badge, guard, field, fmtTime, notice, toRFC3339, pagedTable } from "../ui.js";
import { checkboxes, confirmButton, secretBox, statusArea } from "../ops.js";

// The scopes a key can hold (never admin: only admin users hold it).
const scopes = ["accounts:read", "accounts:write", "notifications:send", "messenger:send", "webhooks:manage"];
const keyFields = "id name scopes rateLimit expiresAt createdAt lastUsedAt revokedAt";

export async function render(main) {
  const status = statusArea();
  const secretSlot = h("div");
  const list = h("div");

  function keyState(k) {
    if (k.revokedAt) return badge("revoked", "bad");
    if (k.expiresAt && new Date(k.expiresAt) <= new Date()) return badge("expired", "warn");
    return badge("active", "ok");
  }

  function revokeButton(k) {
    return confirmButton("Revoke", `Revoke ${k.name}? It is refused at once, everywhere.`, "Yes, revoke", async () => {
      await gql(`mutation ($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }`, { id: k.id });
      status.say(notice(`Key ${k.name} revoked.`));
      await load();
    });
  }

  async function load() {
    const { apiKeys } = await gql(`query { apiKeys { ${keyFields} } }`);
    if (!apiKeys.length) return list.replaceChildren(h("p", { class: "muted" }, "No API keys yet."));
    const rows = apiKeys.map((k) => h("tr", {},
      h("td", {}, h("strong", {}, k.name), h("br"), h("code", {}, k.id)),
      h("td", {}, k.scopes.join(", ")),
      h("td", {}, `${k.rateLimit}/min`),
      h("td", {}, keyState(k)),
      h("td", {}, fmtTime(k.createdAt)),
      h("td", {}, fmtTime(k.lastUsedAt)),
      h("td", {}, k.expiresAt ? fmtTime(k.expiresAt) : "never"),
      h("td", {}, k.revokedAt ? fmtTime(k.revokedAt) : revokeButton(k))));
    list.replaceChildren(h("div", { class: "scroll" }, h("table", { "aria-label": "API keys" },
      h("thead", {}, h("tr", {}, ["Key", "Scopes", "Rate limit", "State", "Created", "Last used", "Expires", "Revoked"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows))));
  }

  const name = h("input", { type: "text", name: "name", required: true, maxlength: 100, placeholder: "billing", autocomplete: "off" });
  const scopeSet = checkboxes("Scopes", "scopes", scopes);
  const rate = h("input", { type: "number", name: "rateLimit", min: 1, step: 1, placeholder: "server default" });
  const expires = h("input", { type: "datetime-local", name: "expiresAt" });
  const create = h("button", { type: "submit" }, "Create key");
  const form = h("form", { "aria-label": "New API key" },
    field("Name", name), scopeSet,
    field("Rate limit (requests per minute, optional)", rate),
    field("Expires (your local time, optional)", expires),
    h("div", {}, create));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    guard(async () => {
      const input = { name: name.value.trim(), scopes: scopeSet.checked() };
      if (rate.value !== "") input.rateLimit = Number(rate.value);
      if (expires.value) input.expiresAt = toRFC3339(expires.value);
      const r = await gql(`mutation ($input: CreateApiKeyInput!) { createApiKey(input: $input) { key apiKey { id name } } }`, { input });
      secretSlot.replaceChildren(secretBox(`API key ${r.createApiKey.apiKey.name}`, r.createApiKey.key));
      status.say(notice(`Key ${r.createApiKey.apiKey.name} created. Send it as X-API-Key or Authorization: Bearer.`));
      form.reset();
      await load();
    }, create);
  });

  const OPERATOR_LOG = `query ($first: Int, $after: String) {
    operatorSecurityLog(first: $first, after: $after) { nodes { id kind outcome actor detail at } pageInfo { endCursor hasNextPage } } }`;
  const operatorLog = pagedTable([
    ["When", (e) => fmtTime(e.at)],
    ["What", (e) => e.kind],
    ["Key", (e) => h("code", {}, e.detail?.keyId ?? "")],
    ["By", (e) => e.actor],
  ], async (after) => {
    const { operatorSecurityLog: p } = await gql(OPERATOR_LOG, { first: 50, after });
    return { items: p.nodes, pageInfo: p.pageInfo };
  }, { empty: "No key made or revoked at the command line." });
  operatorLog.id = "operator-log";

  await load();
  main.append(h("h1", {}, "API keys"), status, secretSlot, list, h("h2", {}, "New key"), form,
    h("h2", {}, "Made or revoked at the command line"),
    h("p", { class: "muted" }, "The operators' log: keys made or revoked with herald apikeys (actor cli). A key an admin user made or revoked is in that user's security log."),
    operatorLog);
}
