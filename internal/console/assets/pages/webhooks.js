// Webhooks: the endpoints Herald signs events for (#/webhooks), and one
// endpoint with its deliveries and actions (#/webhooks/<id>).
import { gql } from "../api.js";
import { h, badge, facts, guard, field, fmtTime, notice, pagedTable } from "../ui.js";
import { checkboxes, confirmButton, page, secretBox, sleep, statusArea } from "../ops.js";

const endpointFields = "id url description eventTypes enabled disabledAt disabledReason failingSince previousSecretExpiresAt createdAt";

export async function render(main, [id]) {
  const visit = { left: false };
  if (id) await endpointPage(main, id, visit);
  else await listPage(main);
  return () => { visit.left = true; };
}

// state is an endpoint's health in a word: disabled, failing or healthy.
function state(ep) {
  if (!ep.enabled) return h("span", {}, badge("disabled", "bad"), ep.disabledReason ? h("span", { class: "muted" }, ` ${ep.disabledReason}`) : null);
  if (ep.failingSince) return h("span", {}, badge("failing", "warn"), h("span", { class: "muted" }, ` since ${fmtTime(ep.failingSince)}`));
  return badge("healthy", "ok");
}

async function listPage(main) {
  const data = await gql(`query { webhookEndpoints { ${endpointFields} } webhookEventTypes }`);
  const status = statusArea();
  const secretSlot = h("div");
  const list = h("div");

  function showList(endpoints) {
    if (!endpoints.length) return list.replaceChildren(h("p", { class: "muted" }, "No endpoints yet."));
    const rows = endpoints.map((ep) => h("tr", {},
      h("td", {}, h("a", { href: `#/webhooks/${encodeURIComponent(ep.id)}` }, ep.url), ep.description ? h("div", { class: "muted" }, ep.description) : null),
      h("td", {}, ep.eventTypes.join(", ")),
      h("td", {}, state(ep)),
      h("td", {}, fmtTime(ep.createdAt))));
    list.replaceChildren(h("div", { class: "scroll" }, h("table", { "aria-label": "Webhook endpoints" },
      h("thead", {}, h("tr", {}, ["URL", "Events", "State", "Created"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows))));
  }

  const url = h("input", { type: "url", name: "url", required: true, placeholder: "https://fleet.example.com/herald", autocomplete: "off" });
  const description = h("input", { type: "text", name: "description", maxlength: 500 });
  const types = checkboxes("Event types", "eventTypes", data.webhookEventTypes);
  const create = h("button", { type: "submit" }, "Create endpoint");
  const form = h("form", { "aria-label": "New webhook endpoint" }, field("URL", url), field("Description", description), types, h("div", {}, create));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    guard(async () => {
      const input = { url: url.value.trim(), description: description.value.trim(), eventTypes: types.checked() };
      const r = await gql(`mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret endpoint { id url } } }`, { input });
      const ep = r.createWebhookEndpoint.endpoint;
      secretSlot.replaceChildren(secretBox(`Signing secret of ${ep.url}`, r.createWebhookEndpoint.secret));
      status.say(notice("Endpoint created. "), h("a", { href: `#/webhooks/${encodeURIComponent(ep.id)}` }, "Open it"));
      form.reset();
      showList((await gql(`query { webhookEndpoints { ${endpointFields} } }`)).webhookEndpoints);
    }, create);
  });

  showList(data.webhookEndpoints);
  main.append(h("h1", {}, "Webhooks"), status, secretSlot, list, h("h2", {}, "New endpoint"), form);
}

async function endpointPage(main, id, visit) {
  const { webhookEndpoint: ep } = await gql(`query ($id: ID!) { webhookEndpoint(id: $id) { ${endpointFields} } }`, { id });
  const status = statusArea();
  const secretSlot = h("div");
  const summary = h("div");
  const actions = h("div", { class: "actions" });

  function show(ep) {
    summary.replaceChildren(h("div", { class: "card" }, facts([
      ["URL", h("code", { class: "wrap" }, ep.url)],
      ["Description", ep.description || "—"],
      ["Events", ep.eventTypes.join(", ")],
      ["State", state(ep)],
      ["Disabled", ep.disabledAt ? fmtTime(ep.disabledAt) : null],
      ["Previous secret signs until", ep.previousSecretExpiresAt ? fmtTime(ep.previousSecretExpiresAt) : null],
      ["Created", fmtTime(ep.createdAt)],
    ])));
    const toggle = h("button", { type: "button", class: "secondary" }, ep.enabled ? "Disable" : "Enable");
    toggle.addEventListener("click", () => guard(async () => {
      const r = await gql(`mutation ($id: ID!, $on: Boolean!) { setWebhookEndpointEnabled(id: $id, enabled: $on) { ${endpointFields} } }`, { id, on: !ep.enabled });
      status.say(notice(r.setWebhookEndpointEnabled.enabled ? "Endpoint enabled: its past failures are forgotten." : "Endpoint disabled: it gets no deliveries."));
      show(r.setWebhookEndpointEnabled);
    }, toggle));
    actions.replaceChildren(ping, toggle, rotate, remove);
  }

  // A delivery is recorded once a worker has sent it: look for it for a
  // while (15 s) rather than asking the operator to reload.
  const attemptsOf = (eventId) => lastPage?.items.filter((d) => d.eventId === eventId).length ?? 0;
  async function awaitAttempt(eventId, count) {
    for (let i = 0; i < 15 && !visit.left; i++) {
      await sleep(1000);
      await deliveries.reload();
      if (attemptsOf(eventId) >= count) return;
    }
  }

  const ping = h("button", { type: "button" }, "Send a ping");
  ping.addEventListener("click", () => guard(async () => {
    const { sendWebhookPing: eventId } = await gql(`mutation ($id: ID!) { sendWebhookPing(endpointId: $id) }`, { id });
    status.say(notice(`Ping queued as event ${eventId}; its delivery shows below once sent.`));
    await awaitAttempt(eventId, 1);
  }, ping));

  const rotate = confirmButton("Rotate secret", "Make a new signing secret? The current one goes on signing for 24 hours.", "Yes, rotate", async () => {
    const r = await gql(`mutation ($id: ID!) { rotateWebhookSecret(id: $id) { secret endpoint { ${endpointFields} } } }`, { id });
    secretSlot.replaceChildren(secretBox("New signing secret", r.rotateWebhookSecret.secret));
    show(r.rotateWebhookSecret.endpoint);
  }, { danger: false });

  const remove = confirmButton("Delete", "Delete this endpoint? Its pending deliveries are dropped.", "Yes, delete", async () => {
    await gql(`mutation ($id: ID!) { deleteWebhookEndpoint(id: $id) }`, { id });
    location.hash = "#/webhooks";
  });

  let lastPage = null;
  const deliveries = pagedTable([
    ["Time", (d) => fmtTime(d.createdAt)],
    ["Event", (d) => h("span", {}, d.eventType, h("br"), h("code", {}, d.eventId))],
    ["Attempt", (d) => String(d.attempt)],
    ["Result", (d) => h("span", {}, d.success ? badge("ok", "ok") : badge("failed", "bad"), ` ${d.statusCode ?? "no answer"}`)],
    ["Duration", (d) => `${d.durationMs} ms`],
    ["Error", (d) => d.error ?? ""],
    ["", (d) => redeliverButton(d)],
  ], async (after) => {
    const r = await gql(`query ($id: ID!, $after: String) { webhookDeliveries(endpointId: $id, first: 20, after: $after) {
      nodes { id eventId eventType attempt statusCode success durationMs error createdAt } pageInfo { endCursor hasNextPage } } }`, { id, after });
    const p = page(r.webhookDeliveries);
    if (!after) lastPage = p;
    return p;
  }, { empty: "No delivery attempts yet." });

  function redeliverButton(d) {
    const b = h("button", { type: "button", class: "secondary" }, "Redeliver");
    b.addEventListener("click", () => guard(async () => {
      const before = attemptsOf(d.eventId);
      await gql(`mutation ($id: ID!, $event: ID!) { redeliverWebhookEvent(endpointId: $id, eventId: $event) }`, { id, event: d.eventId });
      status.say(notice(`Event ${d.eventId} queued for delivery again (same webhook-id).`));
      await awaitAttempt(d.eventId, before + 1);
    }, b));
    return b;
  }

  const refresh = h("button", { type: "button", class: "secondary" }, "Refresh");
  refresh.addEventListener("click", () => guard(() => deliveries.reload(), refresh));

  show(ep);
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/webhooks" }, "← All endpoints")),
    h("h1", {}, "Webhook endpoint"),
    status, secretSlot, summary, actions,
    h("div", { class: "toolbar" }, h("h2", {}, "Deliveries"), refresh),
    deliveries);
}
