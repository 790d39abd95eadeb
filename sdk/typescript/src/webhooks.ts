import { Webhook, WebhookVerificationError } from "standardwebhooks";

export { WebhookVerificationError };

/** A Herald webhook event as delivered (Standard Webhooks payload). */
export interface WebhookEvent<T = Record<string, unknown>> {
  type: string;
  timestamp: string;
  data: T;
}

/**
 * Verifies a delivery's signature (Standard Webhooks: `webhook-id`,
 * `webhook-timestamp`, `webhook-signature`) with the endpoint's secret
 * (`whsec_…`; during a rotation, pass both secrets) and returns the parsed
 * event. Throws WebhookVerificationError when no secret verifies it or the
 * timestamp is more than five minutes off. `body` must be the raw body.
 */
export function verifyWebhook<T = Record<string, unknown>>(
  body: string | Uint8Array,
  headers: Record<string, string | string[] | undefined> | Headers,
  secret: string | readonly string[],
): WebhookEvent<T> {
  const flat: Record<string, string> = {};
  if (typeof (headers as Headers).forEach === "function" && typeof (headers as Headers).get === "function") {
    (headers as Headers).forEach((v, k) => (flat[k.toLowerCase()] = v));
  } else {
    for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
      if (v !== undefined) flat[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
    }
  }
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  const secrets = typeof secret === "string" ? [secret] : [...secret];
  if (secrets.length === 0) throw new Error("verifyWebhook: no secret");
  let last: unknown;
  for (const s of secrets) {
    try {
      return new Webhook(s).verify(text, flat) as WebhookEvent<T>;
    } catch (e) {
      last = e;
    }
  }
  throw last;
}
