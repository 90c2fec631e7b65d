/**
 * GET /v1/usage (docs/decision-api.md): a tenant read token (`sluice tokens create --kind tenant`)
 * reads its own tenant's limits and quotas (lib/decision/tenant-usage.ts). The tenant is the
 * token's and nothing else: the request names none. A service token is refused here (it names no
 * tenant), as a tenant token is refused by /v1/check (it is not in the service-token set).
 */
import { readTenantUsageNow, type TenantUsageReader } from "../../lib/decision/tenant-usage";
import { bearerToken } from "../../lib/auth/bearer";
import { errorBody, type ErrorBody } from "../../lib/errors";
import { sha256Hex } from "../../lib/redis/key-index";
import type { CompiledPolicy } from "../../lib/policy/compiled";
import { MAX_FIELD_CHARS } from "../../lib/decision/request";
import type { TenantUsageAnswer } from "../../lib/policy/tenant-usage-answer";
import type { CounterStore } from "../../lib/store/types";
import { withTimeout } from "../../lib/net/timeout";
import type { ServiceTokens } from "./service-tokens";

export interface UsageRouteDeps {
  tokens: ServiceTokens;
  /** null: this mode does not serve GET /v1/usage. */
  reader: TenantUsageReader | null;
  currentPolicy: () => CompiledPolicy | null;
  store: CounterStore;
  prefix: string;
  /** The store's clock as the engine estimates it. */
  storeNowMs: () => number;
  /** The budget of each store read (ms). */
  timeoutMs: number;
}

export type UsageReply = { status: 200; body: TenantUsageAnswer } | { status: 401 | 403 | 404 | 503; body: ErrorBody; headers?: Record<string, string> };

class ReadTimeout extends Error {}

/** The answer to GET /v1/usage with this Authorization header. */
export async function usageRoute(deps: UsageRouteDeps, authorization: string | undefined): Promise<UsageReply> {
  const token = bearerToken(authorization);
  if (!token || token.length > MAX_FIELD_CHARS) return { status: 401, body: errorBody("unauthorized", "missing or wrong tenant token"), headers: { "WWW-Authenticate": "Bearer" } };
  if (deps.tokens.accepts(token)) return { status: 403, body: errorBody("forbidden", "a service token reads no tenant's usage: use a tenant token (sluice tokens create --kind tenant)") };
  if (!deps.reader) return { status: 503, body: errorBody("store_unavailable", "this decision server has no counters GET /v1/usage can read (a counter store passed in without a reader)") };
  const reader = deps.reader;
  const doc = deps.currentPolicy();
  if (!doc) return { status: 503, body: errorBody("not_ready", "no policy loaded yet"), headers: { "Retry-After": "1" } };
  const bounded = <T>(p: Promise<T>) => withTimeout(p, deps.timeoutMs, () => new ReadTimeout());
  try {
    const tenant = await bounded(reader.tenantOfToken(sha256Hex(token)));
    if (tenant === null) return { status: 401, body: errorBody("unauthorized", "missing or wrong tenant token"), headers: { "WWW-Authenticate": "Bearer" } };
    const answer = await readTenantUsageNow(
      { doc, reader: { tenantOfToken: reader.tenantOfToken, readCounters: (keys) => bounded(reader.readCounters(keys)) }, store: deps.store, prefix: deps.prefix, nowMs: deps.storeNowMs(), timeoutMs: deps.timeoutMs },
      tenant,
    );
    // A token of a tenant the policy in force no longer has: nothing to show.
    if (!answer) return { status: 404, body: errorBody("not_found", "the token's tenant is not in the policy in force") };
    return { status: 200, body: answer };
  } catch {
    return { status: 503, body: errorBody("store_unavailable", "the counters could not be read in time; retry") };
  }
}
