/**
 * `sluice/client`: the SDK for services that ask Sluice, and for the clients of APIs it protects.
 * Framework adapters are their own entry points (`sluice/client/express`, `/fastify`, `/hono`,
 * `/next`, `/grpc`, `/graphql`), so this one imports nothing but web-standard globals.
 */
export { SluiceClient, SluiceRequestError, SluiceUnavailableError, MAX_BATCH } from "./client.js";
export type { Lease, LeaseOutcome, PaceResult, SluiceClientOptions } from "./client.js";
export { fetchWithRetry } from "./fetch-with-retry.js";
export type { FetchWithRetryOptions, RetryInfo } from "./fetch-with-retry.js";
export { OriginCooldowns, sharedCooldowns } from "./cooldowns.js";
export { legacyResetMs, parseRateLimitList, rateLimitResetMs, retryAfterMs, serverDelayMs } from "./retry-headers.js";
export { realClock } from "./clock.js";
export type { Clock } from "./clock.js";
export type { DecisionAnswer, DecisionRequest, ExplainedCheck, Reason, SettleAnswer, SettleOutcome, WireAnswer } from "./types.js";
