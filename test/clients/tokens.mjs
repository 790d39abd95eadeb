// Another service verifying Herald's access tokens the standard way: jose
// discovers the key set through /.well-known/openid-configuration and
// checks signature, issuer, audience and expiry offline.
import assert from "node:assert/strict";
import { createRemoteJWKSet, jwtVerify, decodeProtectedHeader, errors } from "jose";

const base = process.env.HERALD_URL;
const token = process.env.TOKEN;
const issuer = process.env.ISSUER;
const audience = process.env.AUDIENCE;

const res = await fetch(`${base}/.well-known/openid-configuration`);
assert.equal(res.status, 200, "discovery answers");
const disc = await res.json();
assert.equal(disc.issuer, issuer, "discovery names the issuer");
assert.deepEqual(disc.id_token_signing_alg_values_supported, ["EdDSA"]);

const jwks = createRemoteJWKSet(new URL(disc.jwks_uri));
const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer, audience, algorithms: ["EdDSA"] });
assert.equal(protectedHeader.alg, "EdDSA");
assert.ok(protectedHeader.kid, "the token names its key");
assert.ok(payload.sub && payload.sid && payload.jti, `sub, sid and jti in ${JSON.stringify(payload)}`);
assert.ok(payload.exp > Date.now() / 1000, "not expired");

// What a careful service refuses.
await assert.rejects(jwtVerify(token, jwks, { issuer, audience: "https://other.example.com" }), errors.JWTClaimValidationFailed, "another audience");
await assert.rejects(jwtVerify(token, jwks, { issuer: "https://evil.example.com", audience }), errors.JWTClaimValidationFailed, "another issuer");
const [h, p, s] = token.split(".");
const tampered = [h, Buffer.from(JSON.stringify({ ...payload, sub: "someone-else" })).toString("base64url"), s].join(".");
await assert.rejects(jwtVerify(tampered, jwks, { issuer, audience }), errors.JWSSignatureVerificationFailed, "a changed payload");
assert.equal(decodeProtectedHeader(token).kid, protectedHeader.kid);
console.log(`ok: jose verified ${payload.jti} for ${payload.sub} and refused the rest`);
