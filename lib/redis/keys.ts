/**
 * Every Redis key Sluice writes, in one place (the counter formats themselves are pure, in
 * lib/policy/counter-keys.ts, so the browser simulator builds them without this module). Each key
 * carries a hash tag (`{…}`) so the same scripts run on Redis Cluster: all of a tenant's counters
 * share the tag `{t:<slug>}`, so one decision's tenant checks are one slot. `SLUICE_REDIS_PREFIX` (default `sl:`) namespaces a
 * deployment, or a test run.
 */
import { currentEnv } from "../env";
import { counterKeys } from "../policy/counter-keys";

export function redisPrefix(): string {
  return currentEnv("SLUICE_REDIS_PREFIX");
}

/**
 * Field of `keys.keyIndex()` and member of `keys.serviceTokens()` that publish (and the restore
 * job) write in the same MULTI as the rest: present, the index or set is what the control plane
 * published, even when it holds nothing else; absent, Redis lost it (a restart without
 * persistence, failover to an empty replica, an eviction), which never means "no keys" or "no
 * tokens". Not 64 hex characters, so it can never name a key or a token.
 */
export const PUBLISHED_MARKER = "_published";

export const keys = {
  /** <p>policy:v<N> — one published compiled document (JSON string). Never expires. */
  policyVersion: (version: number, p = redisPrefix()) => `${p}{policy}:v${version}`,
  /** <p>policy:current — the live version number. */
  policyCurrent: (p = redisPrefix()) => `${p}{policy}:current`,
  /**
   * <p>{policy}:rollout — the running rollout's routing (lib/policy/rollout.ts RolloutRouting, JSON):
   * which version the cohort gets and who is in it; absent: everyone gets policy:current. Never expires.
   */
  policyRollout: (p = redisPrefix()) => `${p}{policy}:rollout`,
  /** <p>{policy}:channel — PUBLISHed with the new version number on every publish. */
  policyChannel: (p = redisPrefix()) => `${p}{policy}:channel`,
  /** <p>{policy}:keys — hash sha256(api key) → tenant slug, plus PUBLISHED_MARKER → version. Revoked keys are removed. */
  keyIndex: (p = redisPrefix()) => `${p}{policy}:keys`,
  /** <p>{policy}:region-shares — the weights of `split` limits per region, JSON (lib/policy/region-shares.ts); the same in every region. Never expires. */
  regionShares: (p = redisPrefix()) => `${p}{policy}:region-shares`,
  /**
   * <p>{replication}:heard — hash region → when a batch or heartbeat of that region last arrived in
   * this region (ms, this Redis's TIME), written by whichever decision process applied it and read
   * by all of them (lib/regions/region-heard.ts): a `shared` limit's linked regions give up the
   * share of a region silent too long. PEXPIRE 7 days on every write.
   */
  regionHeard: (p = redisPrefix()) => `${p}{replication}:heard`,
  /** <p>{policy}:keys:channel — PUBLISHed with a key hash when that key is revoked. */
  keyChannel: (p = redisPrefix()) => `${p}{policy}:keys:channel`,
  /** <p>{t:<tenant>}:c:<limitId>:<subject> — a tenant's counter (lib/policy/counter-keys.ts). */
  counter: (tenant: string, limitId: string, subject: string, p = redisPrefix()) => counterKeys.counter(tenant, limitId, subject, p),
  /** <p>{t:<tenant>}:q:<quotaId> — a tenant's quota counter; the period is appended. */
  quota: (tenant: string, quotaId: string, p = redisPrefix()) => counterKeys.quota(tenant, quotaId, p),
  /** <p>{g:<capId>}:g — a global cap's counter, shared by all tenants. */
  globalCap: (capId: string, p = redisPrefix()) => counterKeys.globalCap(capId, p),
  /** <p>{u:<minute>}:usage — hash of one minute's decision counts (see lib/redis/usage-format.ts). */
  usageMinute: (minuteStartMs: number, p = redisPrefix()) => `${p}{u:${minuteStartMs}}:usage`,
  /** <p>{policy}:service-tokens — set of sha256(service token) hex the decision API accepts, plus PUBLISHED_MARKER (written by publish). */
  serviceTokens: (p = redisPrefix()) => `${p}{policy}:service-tokens`,
  /**
   * <p>{policy}:service-tokens:last-used — hash sha256(service token) → when a decision server last
   * accepted it (ms, to the minute: each server writes its tokens once a minute, off the decision
   * path). The control plane shows it as the token's "last used"; a revocation deletes the field.
   */
  serviceTokenLastUsed: (p = redisPrefix()) => `${p}{policy}:service-tokens:last-used`,
  /**
   * <p>{policy}:tenant-tokens — hash sha256(tenant read token) → tenant slug, plus PUBLISHED_MARKER:
   * the tokens `GET /v1/usage` accepts, each for its one tenant. Never a service token.
   */
  tenantTokens: (p = redisPrefix()) => `${p}{policy}:tenant-tokens`,
  /** <p>{u}:usage-minutes — set of minute starts (ms) with usage hashes not yet drained into Postgres. */
  usageMinutes: (p = redisPrefix()) => `${p}{u}:usage-minutes`,
  /** <p>{u:<minute>}:usage:claimed — a minute's hash renamed by the rollup worker while it drains it (TTL 30 d). */
  usageClaimed: (minuteStartMs: number, p = redisPrefix()) => `${p}{u:${minuteStartMs}}:usage:claimed`,
  /** <p>{u:<minute>}:usage:seq — the token of the minute's current claim (TTL 30 d); names the rollup cursor. */
  usageClaimSeq: (minuteStartMs: number, p = redisPrefix()) => `${p}{u:${minuteStartMs}}:usage:seq`,
  /**
   * <p>{<tag>}:rsv:<token> — a reservation's record in the slot of `counterKey` (any counter key,
   * whose prefix and hash tag it takes): HASH c (reserved cost), u (JSON undo commands), a / r
   * (actual cost, refunded; once settled); PEXPIRE RESERVATION_TTL_MS (lib/store/reservation.ts).
   */
  reservation: (counterKey: string, token: string) => `${counterKey.slice(0, counterKey.indexOf("}") + 1)}:rsv:${token}`,
  /** <p>{g:<limitId>}:c:<limitId>:_ — a tier limit with scope `global`: one counter across tenants. */
  globalLimit: (limitId: string, p = redisPrefix()) => counterKeys.globalLimit(limitId, p),
};
