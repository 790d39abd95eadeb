// My account: the signed-in operator's passkeys. Registering one lets the
// console sign in with it (no password), and a password sign-in then asks
// for it as the second step; removing one needs a session signed in with
// a second factor (a passkey sign-in is one).
import { gql, registerPasskey, email, passkeysOn } from "../api.js";
import { h, guard, field, fmtTime, notice } from "../ui.js";
import { confirmButton, statusArea } from "../ops.js";
import { supported } from "../passkey.js";

export async function render(main) {
  const status = statusArea();
  const list = h("div", { id: "passkeys" });

  async function load() {
    const { myPasskeys } = await gql(`query { myPasskeys { id name createdAt lastUsedAt backedUp counterRegressions } }`);
    if (!myPasskeys.length) {
      list.replaceChildren(h("p", { class: "muted" }, "No passkey yet."));
    } else {
      list.replaceChildren(h("table", {},
        h("thead", {}, h("tr", {}, ...["Name", "Added", "Last used", "Synced", ""].map((c) => h("th", {}, c)))),
        h("tbody", {}, ...myPasskeys.map((p) => h("tr", { "data-passkey": p.id },
          h("td", { class: "passkey-name" }, p.name),
          h("td", {}, fmtTime(p.createdAt)),
          h("td", {}, p.lastUsedAt ? fmtTime(p.lastUsedAt) : "never"),
          h("td", {}, p.backedUp ? "yes" : "no"),
          h("td", {}, confirmButton("Remove", `Remove the passkey ${p.name}?`, "Yes, remove it", async () => {
            await gql(`mutation ($id: ID!) { removePasskey(passkeyId: $id) { removed } }`, { id: p.id });
            status.say(notice(`The passkey ${p.name} is removed.`));
            await load();
          })))))));
    }
    list.dataset.loaded = String(myPasskeys.length);
  }

  const name = h("input", { type: "text", name: "passkey-name", maxlength: 64, placeholder: "This laptop", autocomplete: "off" });
  const add = h("button", { type: "submit" }, "Register a passkey");
  const form = h("form", { class: "inline", "aria-label": "Register a passkey" }, field("Passkey name", name), add);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    guard(async () => {
      const p = await registerPasskey(name.value.trim());
      status.say(notice(`The passkey ${p.name} is registered: sign in with it next time.`));
      form.reset();
      await load();
    }, add);
  });

  // Registering needs both the browser and the server: say which is missing.
  const on = await passkeysOn();
  main.append(h("h1", {}, "My account"),
    h("p", { class: "muted" }, `Signed in as ${email()}.`),
    status, h("h2", {}, "Passkeys"),
    !on ? h("p", { class: "muted", id: "passkeys-off" }, "Passkeys are off on this server (HERALD_WEBAUTHN_RP_ID is not set).")
      : supported() ? form : h("p", { class: "muted" }, "This browser cannot use passkeys here (it needs HTTPS, or localhost)."),
    list);
  await load();
}
