// The console's one way to Herald: REST (the envelope) and GraphQL, with
// the access token held in memory only and renewed with the refresh token.
// Every failure is an ApiError with Herald's code, never a bare exception.

import * as passkey from "./passkey.js";

export class ApiError extends Error {
  constructor(code, message, status = 0, details = undefined) {
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

// The session lives in this module's memory: a reload signs out.
const session = { access: "", refresh: "", expiresAt: 0, email: "" };
let renewing = null;
let onSignedOut = () => {};

export function signedIn() { return session.access !== ""; }
export function email() { return session.email; }
export function whenSignedOut(fn) { onSignedOut = fn; }

function keep(data, email) {
  session.access = data.token ?? data.accessToken;
  session.refresh = data.refreshToken ?? session.refresh;
  session.expiresAt = Date.now() + (data.expiresIn ?? 900) * 1000;
  if (email !== undefined) session.email = email;
}

function forget() {
  session.access = session.refresh = session.email = "";
  session.expiresAt = 0;
}

// passkeysOn asks the server whether passkeys are on (GET
// /api/v1/auth/methods, public), once a page load: false when they are
// off, or when the server cannot be asked (its passkey operations would
// fail too).
let methods = null;
export async function passkeysOn() {
  methods ??= send("GET", "/api/v1/auth/methods", undefined, false).catch(() => ({ passkeys: false }));
  return (await methods).passkeys === true;
}

// signIn logs in and checks that the account is an admin; a non-admin is
// logged out again and refused with NOT_AN_ADMIN. It resolves to null
// once signed in. A login that answers MFA_REQUIRED resolves to its second
// step, { email, challengeToken, expiresAt, factors }, for the page to
// complete with a code (completeSignIn) or a passkey
// (completeSignInWithPasskey); when a passkey is the only factor it is
// used at once.
export async function signIn(emailAddr, password) {
  let data;
  try {
    data = await send("POST", "/api/v1/auth/login", { email: emailAddr, password }, false);
  } catch (e) {
    if (e.code !== "MFA_REQUIRED" || !e.details?.challengeToken) throw e;
    const step = { email: emailAddr, challengeToken: e.details.challengeToken, expiresAt: e.details.expiresAt, factors: e.details.factors ?? [] };
    if (!takesCode(step) && step.factors.includes("passkey")) {
      await completeSignInWithPasskey(step);
      return null;
    }
    return step;
  }
  keep(data, emailAddr);
  await mustBeAdmin();
  return null;
}

// takesCode reports whether a second step can be completed with a code:
// an authenticator app's or a recovery code.
export function takesCode(step) {
  return step.factors.includes("totp") || step.factors.includes("recovery");
}

// completeSignIn completes a second step with a TOTP or recovery code.
export async function completeSignIn(step, code) {
  const data = await send("POST", "/api/v1/auth/login/mfa", { challengeToken: step.challengeToken, code }, false);
  keep(data, step.email);
  await mustBeAdmin();
}

// completeSignInWithPasskey completes a second step with one of the
// account's passkeys.
export async function completeSignInWithPasskey(step) {
  const { challengeToken } = step;
  const begun = await send("POST", "/api/v1/auth/login/mfa/passkey/begin", { challengeToken }, false);
  const credential = await passkey.get(begun.publicKey);
  const data = await send("POST", "/api/v1/auth/login/mfa/passkey/finish", { challengeToken, challengeId: begun.challengeId, credential }, false);
  keep(data, step.email);
  await mustBeAdmin();
}

// signInWithPasskey signs in without a password: the browser offers the
// passkeys it holds for this server.
export async function signInWithPasskey() {
  const begun = await send("POST", "/api/v1/auth/passkey/begin", undefined, false);
  const credential = await passkey.get(begun.publicKey);
  const data = await send("POST", "/api/v1/auth/passkey/finish", { challengeId: begun.challengeId, credential }, false);
  keep(data, "");
  try {
    session.email = (await send("GET", "/api/v1/users/me", undefined, true)).email;
  } catch (e) {
    forget();
    throw e;
  }
  await mustBeAdmin();
}

// registerPasskey registers a passkey of this browser (or a security key,
// or a phone) for the signed-in operator.
export async function registerPasskey(name) {
  const begun = await rest("POST", "/api/v1/users/me/passkeys/register/begin");
  const credential = await passkey.create(begun.publicKey);
  return rest("POST", "/api/v1/users/me/passkeys/register/finish", { challengeId: begun.challengeId, name, credential });
}

async function mustBeAdmin() {
  try {
    await gql("query { apiKeys { id } }");
  } catch (e) {
    if (e.code === "INSUFFICIENT_PERMISSIONS") {
      await signOut(true);
      throw new ApiError("NOT_AN_ADMIN", "This account is not an admin: the console is for Herald's operators. Sign in with an admin account (herald admin create).", 403);
    }
    forget();
    throw e;
  }
}

// signOut logs the session out at Herald (ending its refresh token), then
// forgets it here.
export async function signOut(quiet = false) {
  if (session.access) {
    try { await send("POST", "/api/v1/auth/logout", {}, true); } catch { /* signed out here anyway */ }
  }
  forget();
  if (!quiet) onSignedOut();
}

async function renew() {
  if (!session.refresh) throw new ApiError("TOKEN_EXPIRED", "The session has ended; sign in again.", 401);
  renewing ??= (async () => {
    try {
      const data = await send("POST", "/api/v1/auth/refresh", { refreshToken: session.refresh }, false);
      keep(data);
    } catch (e) {
      forget();
      onSignedOut();
      throw e;
    } finally {
      renewing = null;
    }
  })();
  return renewing;
}

// token returns a fresh access token, renewing it a minute before expiry.
export async function token() {
  if (session.access && Date.now() > session.expiresAt - 60_000) await renew();
  return session.access;
}

async function send(method, path, body, authed) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (authed) headers.Authorization = `Bearer ${await token()}`;
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError("NETWORK_ERROR", `Herald could not be reached: ${e.message}`);
  }
  let env;
  try {
    env = await resp.json();
  } catch {
    throw new ApiError("BAD_RESPONSE", `Herald answered ${resp.status} without a JSON body.`, resp.status);
  }
  if (!env.success) {
    const err = env.error ?? {};
    throw new ApiError(err.code ?? "UNKNOWN", err.message ?? `HTTP ${resp.status}`, resp.status, err.details);
  }
  return env.data;
}

// rest calls a REST path with the session's token, renewing it once if
// Herald says it expired.
export async function rest(method, path, body) {
  try {
    return await send(method, path, body, true);
  } catch (e) {
    if (e.code !== "TOKEN_EXPIRED") throw e;
    await renew();
    return send(method, path, body, true);
  }
}

async function postGQL(query, variables) {
  let resp;
  try {
    resp = await fetch("/graphql", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/graphql-response+json", Authorization: `Bearer ${await token()}` },
      body: JSON.stringify({ query, variables }),
    });
  } catch (e) {
    throw new ApiError("NETWORK_ERROR", `Herald could not be reached: ${e.message}`);
  }
  let body;
  try {
    body = await resp.json();
  } catch {
    throw new ApiError("BAD_RESPONSE", `Herald answered ${resp.status} without a JSON body.`, resp.status);
  }
  if (body.errors?.length) {
    const first = body.errors[0];
    throw new ApiError(first.extensions?.code ?? "GRAPHQL_ERROR", first.message, resp.status, first.extensions?.details);
  }
  return body.data;
}

// gql runs a GraphQL document and returns its data, renewing the token
// once on TOKEN_EXPIRED.
export async function gql(query, variables = {}) {
  try {
    return await postGQL(query, variables);
  } catch (e) {
    if (e.code !== "TOKEN_EXPIRED") throw e;
    await renew();
    return postGQL(query, variables);
  }
}

// events reads a Server-Sent Events stream with the session's token (an
// EventSource cannot send one) and calls onEvent(type, data) for each
// event until the stream ends or signal aborts.
export async function events(path, onEvent, signal) {
  let resp;
  try {
    resp = await fetch(path, { headers: { Accept: "text/event-stream", Authorization: `Bearer ${await token()}` }, signal });
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new ApiError("NETWORK_ERROR", `Herald could not be reached: ${e.message}`);
  }
  if (!resp.ok) {
    let err = {};
    try { err = (await resp.json()).error ?? {}; } catch { /* not JSON */ }
    throw new ApiError(err.code ?? "UNKNOWN", err.message ?? `HTTP ${resp.status}`, resp.status, err.details);
  }
  if (resp.status === 204 || !resp.body) return; // a finished job the client has seen
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(type, JSON.parse(data.join("\n")));
    }
  }
}
