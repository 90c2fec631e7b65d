/**
 * Which check denied a decision, for the usage aggregates (`r|…` by limit name and `q|<tenant>|<quotaId>`,
 * lib/redis/usage.ts) and through them the dashboards' 429s by limit and the billing export's
 * "denied for quota" figure. Pure: no I/O, no clock.
 *
 * The denying check is the one the answer names (`mostRestrictive` in ./answer.ts, the same choice
 * that sets the answer's reason, Retry-After and RateLimit headers), so a decision counts for one
 * quota at most: a request that a rate limit and a quota both refuse is attributed to the check the
 * client is told about — the quota when it frees later, as it usually does.
 */
import type { StoreDecision } from "../store/types";
import { mostRestrictive } from "./answer";
import type { PlannedCheck } from "./checks";

/** The `}:q:` that ends the hash tag in `keys.quota(tenant, quotaId)`: `<p>{t:<tenant>}:q:<quotaId>`. */
const QUOTA_KEY_MARK = "}:q:";

/** The quota id of a quota check (from its counter key), or null for any other kind of check. */
export function quotaIdOf(planned: PlannedCheck): string | null {
  if (planned.check.kind !== "quota") return null;
  const key = planned.check.key;
  const at = key.lastIndexOf(QUOTA_KEY_MARK);
  if (at === -1) return null;
  const id = key.slice(at + QUOTA_KEY_MARK.length);
  return id === "" ? null : id;
}

/** Which check denied a decision: its RateLimit-Policy name, and its quota id when it is a quota. */
export interface Denial {
  limit: string;
  quota: string | null;
}

/**
 * The check that denied this store decision (the one the answer names), or null when it passed.
 * Only on the deny path: an allowed decision costs one property read.
 */
export function denialOf(decision: StoreDecision, planned: readonly PlannedCheck[]): Denial | null {
  if (decision.allowed) return null;
  const i = mostRestrictive(decision, planned);
  if (i === -1 || decision.outcomes[i]?.allowed !== false) return null;
  const p = planned[i]!;
  return { limit: p.name, quota: quotaIdOf(p) };
}

