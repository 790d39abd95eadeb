import { ERROR_CATALOGUE, ERROR_CODES, type ErrorCode, type ErrorSchemas } from "./generated/errors.js";

export { ERROR_CATALOGUE, ERROR_CODES };
export type { ErrorCode, RestErrorCode } from "./generated/errors.js";

type DetailsOfSchema<S> = S extends { details?: infer D } ? Exclude<D, undefined> : never;

/**
 * The `details` of an error with code C, as the OpenAPI document gives them
 * (a union where one code has several shapes, as TOKEN_EXPIRED for an access
 * and a refresh token). Codes without a schema (GraphQL-only codes) get a
 * plain record; codes that carry no details get `undefined`.
 */
export type ErrorDetails<C extends ErrorCode> = C extends keyof ErrorSchemas
  ? [DetailsOfSchema<ErrorSchemas[C]>] extends [never]
    ? undefined
    : DetailsOfSchema<ErrorSchemas[C]>
  : Record<string, unknown> | undefined;

/** Codes the SDK itself uses: the server could not be reached, or the answer was not Herald's. */
export type ClientErrorCode = "NETWORK_ERROR" | "ABORTED" | "INVALID_RESPONSE";

export type AnyErrorCode = ErrorCode | ClientErrorCode;

export interface HeraldErrorInit<C extends AnyErrorCode> {
  code: C;
  message: string;
  status: number;
  requestId?: string | undefined;
  details?: unknown;
  retryAfter?: number | undefined;
  cause?: unknown;
  source?: "rest" | "graphql" | "client";
}

/**
 * An error answered by Herald (REST envelope or GraphQL `extensions.code`),
 * or met on the way (NETWORK_ERROR, ABORTED, INVALID_RESPONSE; status 0).
 * Branch on `code`: narrowing it narrows `details`.
 */
export class HeraldError<C extends AnyErrorCode = AnyErrorCode> extends Error {
  override readonly name = "HeraldError";
  readonly code: C;
  /** The HTTP status; 0 when there was no answer. */
  readonly status: number;
  /** The answer's X-Request-ID, to quote to support. */
  readonly requestId: string | undefined;
  readonly details: C extends ErrorCode ? ErrorDetails<C> : undefined;
  /** Seconds, from the Retry-After header or `details.retryAfter`. */
  readonly retryAfter: number | undefined;
  readonly source: "rest" | "graphql" | "client";

  constructor(init: HeraldErrorInit<C>) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.details = init.details as C extends ErrorCode ? ErrorDetails<C> : undefined;
    this.retryAfter = init.retryAfter;
    this.source = init.source ?? "rest";
  }

  /** Whether this error has code `code` (narrows `details`). */
  is<K extends AnyErrorCode>(code: K): this is HeraldError<K> {
    return (this.code as AnyErrorCode) === code;
  }
}

/** A discriminated view of an error, for `switch (e.code)` with typed details. */
export type HeraldErrorOf = { [C in AnyErrorCode]: HeraldError<C> }[AnyErrorCode];

export function isHeraldError(e: unknown): e is HeraldErrorOf {
  return e instanceof HeraldError;
}

/** The statuses the interface calls retryable. */
export const RETRYABLE_STATUSES: readonly number[] = [429, 500, 502, 503];

/**
 * Whether the interface lets a client retry this error: the statuses 429,
 * 500, 502 and 503, and network errors. Everything else (400, 401, 403,
 * 404, 409, 422, an abort) fails again unchanged. TOKEN_EXPIRED is not
 * retryable as such: it is refreshed, then the request is retried once.
 */
export function isRetryable(error: unknown): boolean {
  if (!(error instanceof HeraldError)) return false;
  if (error.code === "NETWORK_ERROR") return true;
  if (error.code === "ABORTED") return false;
  if (error.status === 0 && error.code in ERROR_CATALOGUE) {
    return RETRYABLE_STATUSES.includes(ERROR_CATALOGUE[error.code as ErrorCode].status);
  }
  return RETRYABLE_STATUSES.includes(error.status);
}

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, code);
}
