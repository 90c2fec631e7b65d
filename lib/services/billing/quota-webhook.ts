/**
 * Quota notifications as signed webhooks (docs/billing-periods.md, "Threshold notifications").
 *
 * Each delivery is a POST of one CloudEvents 1.0 JSON event with three headers:
 *   Sluice-Event-Id    the event's `id` (stable across attempts and re-sends: deduplicate on it)
 *   Sluice-Timestamp   Unix seconds when this attempt was signed
 *   Sluice-Signature   v1=<hex HMAC-SHA256(endpoint secret, "<timestamp>.<body>")>
 * A receiver recomputes the HMAC over the exact body bytes, compares in constant time, and refuses
 * a timestamp more than 5 minutes from its clock (a replayed request carries an old one).
 *
 * Delivery reuses the alert webhook's sender (lib/services/observe/alert-webhook.ts): the same SSRF rules
 * (globally reachable addresses only, resolved once, no redirects, https).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { assertDeliverable, deliverWebhook, type DeliveryResult, type Resolver } from "../observe/alert-webhook";

export const SIGNATURE_HEADER = "sluice-signature";
export const TIMESTAMP_HEADER = "sluice-timestamp";
export const EVENT_ID_HEADER = "sluice-event-id";
/** How far a receiver should accept a timestamp from its own clock. */
export const REPLAY_WINDOW_SECONDS = 300;

export function signPayload(secret: string, timestampSeconds: number, body: string): string {
  return `v1=${createHmac("sha256", secret).update(`${timestampSeconds}.${body}`).digest("hex")}`;
}

/** The receiver's check (the documented snippet does the same): signature over the exact bytes, timestamp within the window. */
export function verifySignature(
  secret: string,
  headers: { signature: string | undefined; timestamp: string | undefined },
  body: string,
  nowSeconds: number,
): { ok: true } | { ok: false; reason: "missing" | "stale" | "mismatch" } {
  const { signature, timestamp } = headers;
  if (!signature || !timestamp || !/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: "missing" };
  if (Math.abs(nowSeconds - Number(timestamp)) > REPLAY_WINDOW_SECONDS) return { ok: false, reason: "stale" };
  const expected = Buffer.from(signPayload(secret, Number(timestamp), body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given) ? { ok: true } : { ok: false, reason: "mismatch" };
}

/** Refuses a URL the alert webhook would refuse (SSRF), with its reason. */
export async function checkEndpointUrl(url: string, allowPrivate: boolean, resolve?: Resolver): Promise<void> {
  await assertDeliverable(url, allowPrivate, resolve);
}

/** One attempt (the notification job schedules the retries): POST `body` signed with `secret`. */
export async function sendSignedEvent(
  endpoint: { url: string; secret: string },
  body: string,
  eventId: string,
  options: { allowPrivate: boolean; nowSeconds: () => number; timeoutMs?: number; resolve?: Resolver },
): Promise<DeliveryResult> {
  return deliverWebhook(endpoint.url, body, {
    allowPrivate: options.allowPrivate,
    attempts: 1,
    timeoutMs: options.timeoutMs ?? 10_000,
    resolve: options.resolve,
    headers: (payload) => {
      const ts = options.nowSeconds();
      return {
        "content-type": "application/cloudevents+json; charset=utf-8",
        "user-agent": "sluice-notifications/1",
        [EVENT_ID_HEADER]: eventId,
        [TIMESTAMP_HEADER]: String(ts),
        [SIGNATURE_HEADER]: signPayload(endpoint.secret, ts, payload),
      };
    },
  });
}
