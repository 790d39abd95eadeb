// The console's shell: sign-in, navigation and the hash router. Each page
// is a module in pages/ exporting render(main, params) (it may return a
// function called when the page is left, to stop live updates).
import * as api from "./api.js";
import * as passkey from "./passkey.js";
import { h, guard, clearError, showError, field } from "./ui.js";

const pages = {
  overview: "./pages/overview.js",
  users: "./pages/users.js",
  user: "./pages/user.js",
  broadcasts: "./pages/broadcasts.js",
  messenger: "./pages/messenger.js",
  webhooks: "./pages/webhooks.js",
  apikeys: "./pages/apikeys.js",
  bans: "./pages/bans.js",
  account: "./pages/account.js",
};

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const signout = document.getElementById("signout");
let leave = null;

function chrome(on) {
  nav.hidden = !on;
  signout.hidden = !on;
  who.textContent = on ? api.email() : "";
}

// leavePage stops the current page's live updates (timers, streams).
function leavePage() {
  if (leave) { try { leave(); } catch { /* the page is gone anyway */ } leave = null; }
}

// signedOutNote is said above the sign-in form after a sign-out.
let signedOutNote = "";

function signInForm() {
  leavePage();
  chrome(false);
  const emailIn = h("input", { type: "email", name: "email", autocomplete: "username", required: true });
  const passIn = h("input", { type: "password", name: "password", autocomplete: "current-password", required: true });
  const submit = h("button", { type: "submit" }, "Sign in");
  // A passkey signs in without the email and password, where the browser
  // can use one (HTTPS or localhost) and the server has passkeys on: the
  // button is added once the server has said so.
  const withPasskey = h("button", { type: "button", class: "secondary" }, "Sign in with a passkey");
  const passkeyRow = h("p", { hidden: true }, withPasskey);
  const form = h("form", { class: "card signin", "aria-label": "Sign in" },
    h("h1", {}, "Sign in to Herald"),
    signedOutNote ? h("p", { class: "muted", role: "status" }, signedOutNote) : null,
    h("p", { class: "muted" }, "For Herald's operators: an account made with herald admin create."),
    field("Email", emailIn), field("Password", passIn), submit,
    passkeyRow);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await guard(async () => {
      const step = await api.signIn(emailIn.value.trim(), passIn.value);
      passIn.value = "";
      if (step) secondStepForm(step);
      else signedIn();
    }, submit);
  });
  withPasskey.addEventListener("click", () => guard(async () => {
    await api.signInWithPasskey();
    signedIn();
  }, withPasskey));
  main.replaceChildren(form);
  emailIn.focus();
  if (passkey.supported()) api.passkeysOn().then((on) => { passkeyRow.hidden = !on; });
}

function signedIn() {
  signedOutNote = "";
  if (!location.hash || location.hash === "#/signin") location.hash = "#/overview";
  else route();
}

// secondStepForm asks for the second factor of a password sign-in that
// answered MFA_REQUIRED: the authenticator app's code or a recovery code,
// or one of the account's passkeys. A wrong code leaves the step open; a
// challenge that ended (MFA_CHALLENGE_INVALID: used, or older than five
// minutes) or an account that is not an admin goes back to the password.
function secondStepForm(step) {
  const codeIn = h("input", {
    name: "code", autocomplete: "one-time-code", required: true, maxlength: "32",
    spellcheck: "false", autocapitalize: "off", "aria-describedby": "code-hint",
  });
  const verify = h("button", { type: "submit" }, "Verify");
  const withPasskey = step.factors.includes("passkey") && passkey.supported()
    ? h("button", { type: "button", class: "secondary" }, "Use a passkey instead") : null;
  const startOver = h("button", { type: "button", class: "secondary" }, "Start over");
  const form = h("form", { class: "card signin", "aria-label": "Second step" },
    h("h1", {}, "Second step"),
    h("p", { class: "muted", id: "code-hint" }, `${step.email} has a second factor: enter the 6-digit code your authenticator app shows, or one of your recovery codes.`),
    field("Code", codeIn), verify,
    h("div", { class: "actions" }, withPasskey, startOver));
  const attempt = (action, button) => guard(async () => {
    try {
      await action();
    } catch (e) {
      codeIn.value = "";
      if (e.code === "MFA_CHALLENGE_INVALID" || e.code === "NOT_AN_ADMIN") {
        signedOutNote = e.code === "MFA_CHALLENGE_INVALID" ? "That second step has ended (a challenge is used once and lasts five minutes): sign in again." : "";
        signInForm();
      } else {
        codeIn.focus();
      }
      throw e;
    }
    signedIn();
  }, button);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    attempt(() => api.completeSignIn(step, codeIn.value.trim()), verify);
  });
  withPasskey?.addEventListener("click", () => attempt(() => api.completeSignInWithPasskey(step), withPasskey));
  startOver.addEventListener("click", () => { clearError(); signInForm(); });
  main.replaceChildren(form);
  codeIn.focus();
}

// route shows the page the URL fragment names: #/name/param. Each visit
// renders into a container of its own, so a page still loading when the
// operator moves on writes only to a detached element, and its cleanup
// runs as soon as it is returned.
let visit = 0;
async function route() {
  const mine = ++visit;
  leavePage();
  clearError();
  if (!api.signedIn()) return signInForm();
  chrome(true);
  const [first, ...params] = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const name = pages[first] ? first : "overview";
  for (const a of nav.querySelectorAll("a")) {
    const current = a.getAttribute("href") === `#/${name}` || (name === "user" && a.getAttribute("href") === "#/users");
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const container = h("div", { class: "page", "data-page": name });
  main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  try {
    const page = await import(pages[name]);
    if (mine !== visit) return;
    main.replaceChildren(container);
    const cleanup = (await page.render(container, params)) ?? null;
    if (mine === visit) leave = cleanup;
    else if (cleanup) cleanup();
  } catch (e) {
    if (mine !== visit) return;
    main.replaceChildren(container);
    showError(e);
  }
  if (mine === visit) main.focus({ preventScroll: true });
}

api.whenSignedOut(() => { signedOutNote = "Your session ended: sign in again."; visit++; signInForm(); });
signout.addEventListener("click", () => guard(async () => {
  await api.signOut(true);
  signedOutNote = "You are signed out.";
  visit++;
  if (location.hash === "#/signin") signInForm(); else location.hash = "#/signin";
}, signout));
window.addEventListener("hashchange", route);
route();
