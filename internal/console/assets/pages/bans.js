// Bans: client addresses refused with BANNED on every request, whether
// banned by the rate limiter (repeated blocks) or by an operator here.
import { gql } from "../api.js";
import { h, guard, field, fmtTime, notice, pagedTable } from "../ui.js";
import { confirmButton, page, statusArea } from "../ops.js";

export async function render(main) {
  const status = statusArea();
  const tableSlot = h("div");

  function bans() {
    return pagedTable([
      ["Address", (b) => h("code", {}, b.ip)],
      ["Reason", (b) => b.reason || "—"],
      ["Since", (b) => fmtTime(b.createdAt)],
      ["", (b) => confirmButton("Lift", `Lift the ban of ${b.ip}?`, "Yes, lift it", async () => {
        await gql(`mutation ($ip: String!) { liftBan(ip: $ip) }`, { ip: b.ip });
        status.say(notice(`The ban of ${b.ip} is lifted.`));
        tableSlot.replaceChildren(bans());
      }, { danger: false })],
    ], async (after) => page((await gql(`query ($after: String) { bans(first: 50, after: $after) { nodes { ip reason createdAt } pageInfo { endCursor hasNextPage } } }`, { after })).bans),
    { empty: "No address is banned." });
  }

  const ip = h("input", { type: "text", name: "ip", required: true, placeholder: "203.0.113.7 or 2001:db8::1", autocomplete: "off", spellcheck: "false" });
  const reason = h("input", { type: "text", name: "reason", maxlength: 500 });
  const add = h("button", { type: "submit" }, "Ban");
  const form = h("form", { class: "inline", "aria-label": "Ban an address" }, field("IP address", ip), field("Reason", reason), add);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    guard(async () => {
      const r = await gql(`mutation ($ip: String!, $reason: String) { banAddress(ip: $ip, reason: $reason) { ip } }`, { ip: ip.value.trim(), reason: reason.value.trim() });
      status.say(notice(`${r.banAddress.ip} is banned: every request from it is refused with BANNED until the ban is lifted.`));
      form.reset();
      tableSlot.replaceChildren(bans());
    }, add);
  });

  tableSlot.replaceChildren(bans());
  main.append(h("h1", {}, "Bans"),
    h("p", { class: "muted" }, "IPv6 addresses are banned per /64. Take care not to ban your own address."),
    status, h("h2", {}, "Ban an address"), form, h("h2", {}, "Banned addresses"), tableSlot);
}
