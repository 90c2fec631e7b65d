/**
 * The key formats of the counters one decision checks, pure: the decision engine, replay, the limit
 * probe and the browser simulator build them with the deployment's prefix passed in
 * (lib/redis/keys.ts adds `SLUICE_REDIS_PREFIX` for the Redis side, and holds every other key).
 * Each carries a hash tag (`{…}`) so the same scripts run on Redis Cluster: all of a tenant's
 * counters share `{t:<slug>}`, so one decision's tenant checks are one slot.
 */
export const counterKeys = {
  /** <p>{t:<tenant>}:c:<limitId>:<subject> — a tenant's counter; windowed algorithms append suffixes. */
  counter: (tenant: string, limitId: string, subject: string, p: string) => `${p}{t:${tenant}}:c:${limitId}:${subject}`,
  /** <p>{t:<tenant>}:q:<quotaId> — a tenant's quota counter; the period is appended. */
  quota: (tenant: string, quotaId: string, p: string) => `${p}{t:${tenant}}:q:${quotaId}`,
  /** <p>{g:<capId>}:g — a global cap's counter, shared by all tenants. */
  globalCap: (capId: string, p: string) => `${p}{g:${capId}}:g`,
  /** <p>{g:<limitId>}:c:<limitId>:_ — a tier limit with scope `global`: one counter across tenants. */
  globalLimit: (limitId: string, p: string) => `${p}{g:${limitId}}:c:${limitId}:_`,
  /**
   * <p>{e:<ruleId>:<subject>} — the counter of one rule of an Envoy domain (`rateLimitService`) for
   * one subject: the descriptor's values, `|`-joined and escaped. Their fixed window appends
   * `:<windowStartSeconds>`, a calendar period `:<label>`. The tag is the whole counter: each
   * descriptor is decided on its own, so one request's counters may sit in different slots and a
   * busy rule spreads over the cluster (one tag per rule would put every client address on one shard).
   */
  envoy: (ruleId: string, subject: readonly string[], p: string) => `${p}{e:${ruleId}:${encodeEnvoySubject(subject)}}`,
};

/**
 * The limit or global cap id a replicated counter key belongs to (docs/regions.md, `shared`): `c:<id>`
 * after a tenant's or a global limit's tag, or `<id>` in a global cap's `{g:<id>}:g`; null for any
 * other key. Ids are 16 hex characters (lib/policy/compile.ts stableId), so the match is exact.
 */
export function limitIdOfCounterKey(key: string): string | null {
  const tagEnd = key.indexOf("}:");
  if (tagEnd < 0) return null;
  const rest = key.slice(tagEnd + 2);
  if (rest.startsWith("c:")) return /^c:([0-9a-f]{16})(?::|$)/.exec(rest)?.[1] ?? null;
  if (rest === "g") return /\{g:([0-9a-f]{16})$/.exec(key.slice(0, tagEnd))?.[1] ?? null;
  return null;
}

/** `%`, `|`, `{` and `}` percent-encoded, then `|`-joined: injective, and no value can end the hash tag early. */
export function encodeEnvoySubject(values: readonly string[]): string {
  return values.map((v) => v.replace(/[%|{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join("|");
}

/** The prefix of counters in an in-process store of their own (replay, the limit probe, the simulator): no deployment to namespace. */
export const IN_PROCESS = "";
