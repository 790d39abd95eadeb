// WebAuthn in the browser for the console: Herald's options (binary
// members in base64url) turned into what navigator.credentials takes, and
// the credential it answers turned back into JSON
// (PublicKeyCredential.toJSON's form), without relying on the browser
// having parseCreationOptionsFromJSON or toJSON.
import { ApiError } from "./api.js";

function fromB64url(s) {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

function toB64url(buf) {
  const bytes = new Uint8Array(buf);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function descriptors(list) {
  return (list ?? []).map((d) => ({ ...d, id: fromB64url(d.id) }));
}

// supported reports whether the browser can use passkeys here (a secure
// context with WebAuthn).
export function supported() {
  return window.isSecureContext && typeof window.PublicKeyCredential === "function" && !!navigator.credentials;
}

function failed(e) {
  if (e instanceof ApiError) return e;
  const cancelled = e?.name === "NotAllowedError" || e?.name === "AbortError";
  return new ApiError(cancelled ? "PASSKEY_CANCELLED" : "PASSKEY_BROWSER_ERROR",
    cancelled ? "The passkey request was cancelled or timed out." : `The browser could not use a passkey: ${e?.message ?? e}`);
}

// create runs navigator.credentials.create with Herald's creation options.
export async function create(publicKey) {
  if (!supported()) throw new ApiError("PASSKEY_UNSUPPORTED", "This browser cannot use passkeys here (it needs HTTPS, or localhost).");
  const options = {
    ...publicKey,
    challenge: fromB64url(publicKey.challenge),
    user: { ...publicKey.user, id: fromB64url(publicKey.user.id) },
    excludeCredentials: descriptors(publicKey.excludeCredentials),
  };
  let cred;
  try {
    cred = await navigator.credentials.create({ publicKey: options });
  } catch (e) {
    throw failed(e);
  }
  const r = cred.response;
  return {
    id: cred.id, rawId: toB64url(cred.rawId), type: cred.type,
    authenticatorAttachment: cred.authenticatorAttachment ?? null,
    response: {
      clientDataJSON: toB64url(r.clientDataJSON),
      attestationObject: toB64url(r.attestationObject),
      transports: typeof r.getTransports === "function" ? r.getTransports() : [],
    },
    clientExtensionResults: cred.getClientExtensionResults(),
  };
}

// get runs navigator.credentials.get with Herald's request options.
export async function get(publicKey) {
  if (!supported()) throw new ApiError("PASSKEY_UNSUPPORTED", "This browser cannot use passkeys here (it needs HTTPS, or localhost).");
  const options = { ...publicKey, challenge: fromB64url(publicKey.challenge), allowCredentials: descriptors(publicKey.allowCredentials) };
  let cred;
  try {
    cred = await navigator.credentials.get({ publicKey: options });
  } catch (e) {
    throw failed(e);
  }
  const r = cred.response;
  return {
    id: cred.id, rawId: toB64url(cred.rawId), type: cred.type,
    authenticatorAttachment: cred.authenticatorAttachment ?? null,
    response: {
      clientDataJSON: toB64url(r.clientDataJSON),
      authenticatorData: toB64url(r.authenticatorData),
      signature: toB64url(r.signature),
      userHandle: r.userHandle ? toB64url(r.userHandle) : null,
    },
    clientExtensionResults: cred.getClientExtensionResults(),
  };
}
