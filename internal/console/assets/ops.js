// Helpers of the operator pages (messenger, webhooks, API keys, bans): a
// secret shown once, an inline confirmation and checkbox groups. Built on ui.js; kept apart from it so the pages' needs do not
// crowd the shared helpers.
import { h, guard } from "./ui.js";

// secretBox shows a secret that Herald answers only once (an API key, a
// webhook signing secret), with a copy button and a Done button that
// removes it for good.
export function secretBox(title, secret) {
  const input = h("input", { type: "text", readonly: true, value: secret, class: "secret-value", "aria-label": title, spellcheck: "false" });
  input.addEventListener("focus", () => input.select());
  const copied = h("span", { class: "muted", role: "status" });
  const copy = h("button", { type: "button" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(secret);
      copied.textContent = "Copied.";
    } catch {
      // No clipboard permission: leave it selected for Ctrl+C.
      input.focus();
      copied.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
    }
  });
  const done = h("button", { type: "button", class: "secondary" }, "Done");
  const box = h("div", { class: "card secret", role: "region", "aria-label": title },
    h("h2", {}, title),
    h("p", {}, h("strong", {}, "Copy it now: Herald never shows it again.")),
    h("div", { class: "secret-row" }, input, copy, done),
    copied);
  done.addEventListener("click", () => box.remove());
  return box;
}

// confirmButton is a button whose action runs only after a second,
// explicit click on "Yes, …" (the question replaces the button until then;
// Escape or Cancel puts it back). Keyboard focus follows.
export function confirmButton(label, question, yesLabel, action, { danger = true } = {}) {
  const button = h("button", { type: "button", class: danger ? "danger" : "secondary" }, label);
  const wrap = h("span", { class: "confirm" }, button);
  button.addEventListener("click", () => {
    const yes = h("button", { type: "button", class: danger ? "danger" : "" }, yesLabel);
    const no = h("button", { type: "button", class: "secondary" }, "Cancel");
    const ask = h("span", { class: "confirm-ask", role: "group", "aria-label": question }, h("span", {}, question), yes, no);
    const back = () => { wrap.replaceChildren(button); button.focus(); };
    no.addEventListener("click", back);
    ask.addEventListener("keydown", (ev) => { if (ev.key === "Escape") back(); });
    yes.addEventListener("click", async () => {
      await guard(action, yes);
      if (wrap.isConnected && wrap.contains(ask)) wrap.replaceChildren(button);
    });
    wrap.replaceChildren(ask);
    no.focus();
  });
  return wrap;
}

// checkboxes is a labelled group of checkboxes; .checked() lists the
// values ticked.
export function checkboxes(legend, name, values, { checked = [] } = {}) {
  const boxes = values.map((v) => h("input", { type: "checkbox", name, value: v, checked: checked.includes(v) }));
  const set = h("fieldset", { class: "checks" }, h("legend", {}, legend),
    boxes.map((b) => h("label", { class: "check" }, b, h("span", {}, b.value))));
  set.checked = () => boxes.filter((b) => b.checked).map((b) => b.value);
  return set;
}

// statusArea is a polite live region for a page's success notices.
export function statusArea() {
  const el = h("div", { class: "status-area", "aria-live": "polite" });
  el.say = (...nodes) => el.replaceChildren(...nodes);
  return el;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// page adapts a GraphQL connection ({nodes, pageInfo}) to what
// ui.pagedTable's load returns.
export function page(conn) {
  return { items: conn.nodes, pageInfo: conn.pageInfo };
}
