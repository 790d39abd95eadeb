// Users: find accounts by the beginning of their email (or a whole id),
// filtered by plan, subscription status, verification, disabled and guest
// (a guest has no address, so no email search finds it). The
// filters live in the URL (#/users/query=ann&plan=premium), so a search
// can be shared, reloaded and gone back to.
import * as api from "../api.js";
import { h, field, fmtTime, pagedTable, badge, accountName } from "../ui.js";

const PAGE = 50;
const PLANS = ["trial", "basic", "premium"];

const QUERY = `query ($query: String, $plan: String, $status: String, $verified: Boolean, $disabled: Boolean, $guest: Boolean, $first: Int, $after: String) {
  users(query: $query, plan: $plan, status: $status, verified: $verified, disabled: $disabled, guest: $guest, first: $first, after: $after) {
    nodes { id email emailVerified createdAt disabled lastLoginAt deviceCount subscription { plan status expiresAt } }
    pageInfo { endCursor hasNextPage }
  }
}`;

function select(name, label, options, current) {
  return field(label, h("select", { name },
    options.map(([value, text]) => h("option", { value, selected: value === current }, text))));
}

// bool turns "yes"/"no" into true/false and anything else into null.
function bool(v) {
  return v === "yes" ? true : v === "no" ? false : null;
}

export async function render(main, params) {
  const filters = new URLSearchParams(params[0] ?? "");
  const get = (k) => filters.get(k) ?? "";

  const queryIn = h("input", { type: "search", name: "query", value: get("query"), placeholder: "ann@ or a user id", autocomplete: "off" });
  const form = h("form", { class: "inline", role: "search", "aria-label": "Find users" },
    field("Email or id", queryIn),
    select("plan", "Plan", [["", "Any"], ...PLANS.map((p) => [p, p])], get("plan")),
    select("status", "Subscription", [["", "Any"], ["active", "active"], ["expired", "expired"]], get("status")),
    select("verified", "Verified", [["", "Any"], ["yes", "yes"], ["no", "no"]], get("verified")),
    select("disabled", "Disabled", [["", "Any"], ["yes", "yes"], ["no", "no"]], get("disabled")),
    select("guest", "Guest", [["", "Any"], ["yes", "yes"], ["no", "no"]], get("guest")),
    h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (String(v).trim() !== "") next.set(k, String(v).trim());
    const hash = `#/users/${encodeURIComponent(next.toString())}`;
    if (location.hash === hash) table.reload(); else location.hash = hash;
  });

  const vars = {
    query: get("query") || null,
    plan: get("plan") || null,
    status: get("status") || null,
    verified: bool(get("verified")),
    disabled: bool(get("disabled")),
    guest: bool(get("guest")),
    first: PAGE,
  };
  const table = pagedTable([
    ["Email", (u) => h("a", { href: `#/user/${encodeURIComponent(u.id)}`, class: "user-link" }, accountName(u))],
    ["Plan", (u) => u.subscription.plan],
    ["Subscription", (u) => badge(u.subscription.status, u.subscription.status === "active" ? "ok" : "warn")],
    ["Expires", (u) => fmtTime(u.subscription.expiresAt)],
    ["Account", (u) => [u.emailVerified ? "verified" : badge("unverified", "warn"), u.disabled ? [" ", badge("disabled", "bad")] : null]],
    ["Devices", (u) => u.deviceCount],
    ["Last login", (u) => fmtTime(u.lastLoginAt)],
    ["Created", (u) => fmtTime(u.createdAt)],
  ], async (after) => {
    const { users } = await api.gql(QUERY, { ...vars, after });
    return { items: users.nodes, pageInfo: users.pageInfo };
  }, { empty: "No account matches." });
  table.id = "users";

  main.append(h("h1", {}, "Users"), form, table);
}
