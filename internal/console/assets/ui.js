// Small DOM helpers shared by the pages. No innerHTML with data anywhere:
// text goes in as text, so nothing a user typed can run as markup.

// h builds an element: h("button", { type: "button", onclick: fn }, "Save").
// Attributes starting with "on" become listeners; true/false toggle
// boolean attributes; children are nodes, strings or arrays of them.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// showError puts an API error (code and message) in the page's alert area.
export function showError(e) {
  const box = document.getElementById("error");
  box.replaceChildren(h("code", {}, e.code ?? "ERROR"), ": ", e.message ?? String(e));
  box.hidden = false;
  box.dataset.code = e.code ?? "ERROR";
}

export function clearError() {
  const box = document.getElementById("error");
  box.hidden = true;
  box.replaceChildren();
  delete box.dataset.code;
}

// guard runs an async action, showing its error instead of throwing, and
// disables the button that started it meanwhile.
export async function guard(action, button) {
  clearError();
  if (button) button.disabled = true;
  try {
    return await action();
  } catch (e) {
    showError(e);
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

export function notice(text) {
  return h("p", { class: "notice", role: "status" }, text);
}

export function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

// field is a labelled input: field("Email", h("input", {name: "email"})).
export function field(label, control) {
  return h("label", {}, label, control);
}

// pagedTable shows rows of a cursor-paged list: load(after) resolves to
// { items, pageInfo: { endCursor, hasNextPage } }; columns are
// [heading, item => cell]. "Load more" fetches the next page.
export function pagedTable(columns, load, { empty = "Nothing here yet." } = {}) {
  const body = h("tbody");
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Load more");
  const emptyRow = h("p", { class: "muted", hidden: true }, empty);
  let cursor = null;
  async function next() {
    const page = await guard(() => load(cursor), more);
    if (!page) return;
    for (const item of page.items) body.append(h("tr", {}, columns.map(([, cell]) => h("td", {}, cell(item)))));
    cursor = page.pageInfo?.endCursor ?? null;
    more.hidden = !page.pageInfo?.hasNextPage;
    emptyRow.hidden = body.children.length > 0;
  }
  more.addEventListener("click", next);
  const table = h("div", { class: "scroll" }, h("table", {}, h("thead", {}, h("tr", {}, columns.map(([name]) => h("th", { scope: "col" }, name)))), body));
  const el = h("div", {}, table, emptyRow, more);
  el.reload = async () => { body.replaceChildren(); cursor = null; await next(); };
  // prepend shows an item that was just created above the loaded ones.
  el.prepend = (item) => {
    body.prepend(h("tr", {}, columns.map(([, cell]) => h("td", {}, cell(item)))));
    emptyRow.hidden = true;
  };
  el.loaded = next();
  return el;
}

// fieldError marks a form control invalid with a message next to it (read
// out by screen readers through aria-describedby) and focuses it, unless
// focus is false (a check as the user types, who is already there).
let fieldErrors = 0;
export function fieldError(control, message, { focus = true } = {}) {
  clearFieldError(control);
  const msg = h("p", { class: "field-error", id: `field-error-${++fieldErrors}`, role: "alert" }, message);
  (control.closest("label") ?? control).after(msg);
  control.setAttribute("aria-invalid", "true");
  control.setAttribute("aria-describedby", msg.id);
  if (focus) control.focus();
}

export function clearFieldError(control) {
  const id = control.getAttribute("aria-describedby");
  if (id) document.getElementById(id)?.remove();
  control.removeAttribute("aria-invalid");
  control.removeAttribute("aria-describedby");
}

// facts is a definition list of [term, value] pairs; null values are left out.
export function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// badge is a short status word, coloured by kind: ok, bad, warn or plain.
export function badge(text, kind = "plain") {
  return h("span", { class: `badge badge-${kind}` }, text);
}

// progressBar is an accessible bar; set(done, total) moves it. The width is
// set through the CSSOM, which the CSP allows (style attributes it does not).
export function progressBar(label) {
  const fill = h("div");
  const bar = h("div", { class: "progress", role: "progressbar", "aria-label": label, "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": "0" }, fill);
  bar.set = (done, total) => {
    const pct = total > 0 ? Math.min(100, Math.floor((done * 100) / total)) : 100;
    fill.style.width = `${pct}%`;
    bar.setAttribute("aria-valuenow", String(pct));
    bar.setAttribute("aria-valuetext", `${done} of ${total}`);
  };
  return bar;
}

// toRFC3339 turns a datetime-local value (the browser's local time) into
// an RFC 3339 UTC instant, without milliseconds; "" for an empty value.
export function toRFC3339(local) {
  if (!local) return "";
  const d = new Date(local);
  if (isNaN(d)) return "";
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

// toLocalInput is the other way: an instant as a datetime-local value.
export function toLocalInput(iso) {
  const d = iso instanceof Date ? iso : new Date(iso);
  if (isNaN(d)) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// accountName is how the console names an account: its email, or for a
// guest (no address: the API says email null) "guest" and its id.
export function accountName(u) {
  return u.email ?? `guest ${u.id}`;
}
