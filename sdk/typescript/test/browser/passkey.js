// Passkeys through the SDK in a page (bundled by TestTypeScriptSDKInChromium,
// driven by test/clients/sdk_browser.mjs, which gives Chromium a virtual
// authenticator). The page is at http://localhost:<port>, the relying
// party's origin; Herald is on another origin. It registers a passkey
// through the SDK's two steps, signs in with it alone, then completes a
// password login's second step with it, and writes what it saw into
// #result as JSON. The WebAuthn JSON forms are the browser's own
// (parseCreationOptionsFromJSON, parseRequestOptionsFromJSON, toJSON).
import { HeraldClient, HeraldError } from "../../dist/index.js";

const q = new URLSearchParams(location.search);
const email = q.get("email");
const password = q.get("password");
const out = { origin: location.origin };
const created = async (publicKey) =>
  (await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(publicKey) })).toJSON();
const asserted = async (publicKey) =>
  (await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(publicKey) })).toJSON();
const code = (e) => (e instanceof HeraldError ? e.code : `${e?.name}: ${e?.message}`);
try {
  const herald = new HeraldClient({ baseUrl: q.get("herald") });
  const events = [];
  herald.onAuthStateChange((e) => events.push(e));
  out.login = (await herald.auth.login({ email, password })).status;

  // Registration.
  const reg = await herald.users.beginPasskeyRegistration();
  const passkey = await herald.users.finishPasskeyRegistration({ challengeId: reg.challengeId, name: "SDK Chromium", credential: await created(reg.publicKey) });
  out.registered = passkey.name;
  out.passkeys = (await herald.users.passkeys()).map((p) => p.name);
  await herald.auth.logout();

  // Passwordless sign-in; the same assertion again is refused.
  const begun = await herald.auth.beginPasskeyLogin();
  const body = { challengeId: begun.challengeId, credential: await asserted(begun.publicKey) };
  await herald.auth.finishPasskeyLogin(body);
  out.passkeyMe = (await herald.users.me()).email;
  out.replayed = await herald.auth.finishPasskeyLogin(body).then(() => "accepted", code);
  await herald.auth.logout();

  // The password now needs a second step, which the passkey gives.
  const first = await herald.auth.login({ email, password });
  out.mfa = first.status === "mfaRequired" ? { factors: first.factors } : first.status;
  const mfa = await herald.auth.beginPasskeyMfa({ challengeToken: first.challengeToken });
  await herald.auth.completeMfaLoginWithPasskey({ challengeToken: first.challengeToken, challengeId: mfa.challengeId, credential: await asserted(mfa.publicKey) });
  out.mfaMe = (await herald.users.me()).email;
  out.lastUsed = (await herald.users.passkeys()).map((p) => p.lastUsedAt !== null);

  // Removing it (the session is aal2) leaves the password alone again.
  await herald.users.removePasskey(passkey.id);
  out.afterRemoval = (await herald.users.passkeys()).length;
  out.events = events;
} catch (e) {
  out.error = e instanceof HeraldError ? `${e.code} ${e.status}: ${e.message}` : `${e?.name}: ${e?.message}`;
}
document.getElementById("result").textContent = JSON.stringify(out);
