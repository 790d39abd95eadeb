// Type tests, checked by `npm run test:types` (tsc --noEmit, strict): each
// code the issue names has the details the OpenAPI document gives it, a
// narrowed HeraldError carries them, and a wrong access does not compile.
import type { ErrorCode, ErrorDetails, HeraldError, HeraldErrorOf, RestErrorCode } from "../../src/index.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expect<T extends true>(): T | void {}

// RATE_LIMITED: a tier's refusal or the resend limits.
type RL = ErrorDetails<"RATE_LIMITED">;
expect<Equal<RL["retryAfter"], number>>();
expect<Equal<Extract<RL, { tier: unknown }>["tier"], "global" | "auth" | "protected" | "admin" | "apikey" | "blocked">>();
expect<Equal<Extract<RL, { tier: unknown }>["limit"], number>>();
expect<Equal<Extract<RL, { tier: unknown }>["window"], string>>();

// WEAK_PASSWORD
expect<Equal<ErrorDetails<"WEAK_PASSWORD">["requirements"], string[]>>();
expect<Equal<ErrorDetails<"WEAK_PASSWORD">["failedChecks"], string[]>>();

// TOKEN_EXPIRED: an access or a refresh token.
expect<Equal<ErrorDetails<"TOKEN_EXPIRED">["tokenType"], "access" | "refresh">>();
expect<Equal<ErrorDetails<"TOKEN_EXPIRED">["expiredAt"], string>>();

// DEVICE_LIMIT_REACHED
type DL = ErrorDetails<"DEVICE_LIMIT_REACHED">;
expect<Equal<DL["currentDevices"], number>>();
expect<Equal<DL["maxDevices"], number>>();
expect<Equal<DL["plan"], string>>();
expect<Equal<DL["upgradeUrl"], string>>();

// SUBSCRIPTION_EXPIRED
type SE = ErrorDetails<"SUBSCRIPTION_EXPIRED">;
expect<Equal<SE["plan"], string>>();
expect<Equal<SE["renewUrl"], string>>();
expect<Equal<keyof SE & "expiredAt", "expiredAt">>();

// MFA_REQUIRED (the login's second step)
expect<Equal<ErrorDetails<"MFA_REQUIRED">["factors"], ("totp" | "recovery" | "passkey")[]>>();

// Codes without details, and GraphQL-only codes.
expect<Equal<ErrorDetails<"TOKEN_INVALID">, undefined>>();
expect<Equal<ErrorDetails<"EMAIL_EXISTS">, Record<string, unknown> | undefined>>();

// Every REST code is a catalogue code.
expect<Equal<RestErrorCode extends ErrorCode ? true : false, true>>();

// @ts-expect-error not a code of the catalogue
type Nope = ErrorDetails<"NO_SUCH_CODE">;

declare const e: HeraldErrorOf;
switch (e.code) {
  case "DEVICE_LIMIT_REACHED": {
    const n: number = e.details.maxDevices;
    void n;
    break;
  }
  case "RATE_LIMITED": {
    const s: number = e.details.retryAfter;
    void s;
    break;
  }
  case "TOKEN_INVALID": {
    // @ts-expect-error TOKEN_INVALID carries no details
    void e.details.tokenType;
    break;
  }
}

declare const h: HeraldError;
if (h.is("WEAK_PASSWORD")) {
  const f: string[] = h.details.failedChecks;
  void f;
}
// @ts-expect-error details are not known before narrowing
void h.details.failedChecks;
