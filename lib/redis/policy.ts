/**
 * Published policy in Redis: `policy:v<N>` (the compiled document, JSON), `policy:current` (N),
 * the key index hash (sha256(api key) → tenant slug), the service-token set, and a PUBLISH of N on
 * the policy channel. Writers change all of it in one MULTI, so a reader never sees a current
 * pointer without its document, nor a document with a half-written key index. Every key carries
 * the `{policy}` hash tag, so the MULTI is one slot on Redis Cluster too. None of these keys
 * expire: they are not counters, and losing them would mean "no policy".
 *
 * Redis can still lose them all at once (a restart without persistence, a failover to an empty
 * replica). The key index and the service-token set therefore carry PUBLISHED_MARKER, written in
 * the same MULTI, so that readers can tell "published, and empty" from "lost"; readPublishedState
 * is that probe, for the decision servers (keep the last good copy, say what is missing) and the
 * worker's restore job (lib/jobs/restore-published.ts: write it back from Postgres).
 */
import type { CompiledPolicy } from "../policy/compiled";
import { parseCompiledPolicy } from "../policy/compiled-schema";
import type { PolicyIssue } from "../policy/policy-file";
import { keys, PUBLISHED_MARKER } from "./keys";
import type { RedisClient as RedisLike } from "./client";

export type { RedisLike };

/** HSET / SADD arguments per command, so one huge key set never becomes one giant command. */
const CHUNK = 1_000;

export interface PublishedExtras {
  /** Every unrevoked API key of every tenant (suspended ones too: they must answer 403, not 401). */
  keyIndex: { keyHash: string; tenant: string }[];
  /** sha256 hex of every unrevoked service token; omitted: the set is left as it is. */
  serviceTokens?: string[];
  /** Every unrevoked tenant read token (sha256 hex → slug); omitted: the hash is left as it is. */
  tenantTokens?: { tokenHash: string; tenant: string }[];
}

/**
 * Writes version `doc.version` and makes it current, replacing the key index (and service-token
 * set), then PUBLISHes the version number: one MULTI, all or nothing.
 */
export async function writePublishedPolicy(redis: RedisLike, doc: CompiledPolicy, extras: PublishedExtras): Promise<void> {
  const multi = redis.multi();
  multi.set(keys.policyVersion(doc.version), JSON.stringify(doc));
  multi.set(keys.policyCurrent(), String(doc.version));
  multi.del(keys.keyIndex());
  multi.hset(keys.keyIndex(), PUBLISHED_MARKER, String(doc.version));
  for (let i = 0; i < extras.keyIndex.length; i += CHUNK) {
    const chunk = extras.keyIndex.slice(i, i + CHUNK);
    multi.hset(keys.keyIndex(), Object.fromEntries(chunk.map((e) => [e.keyHash, e.tenant])));
  }
  if (extras.serviceTokens) {
    multi.del(keys.serviceTokens());
    multi.sadd(keys.serviceTokens(), PUBLISHED_MARKER);
    for (let i = 0; i < extras.serviceTokens.length; i += CHUNK) {
      multi.sadd(keys.serviceTokens(), ...extras.serviceTokens.slice(i, i + CHUNK));
    }
  }
  if (extras.tenantTokens) {
    multi.del(keys.tenantTokens());
    multi.hset(keys.tenantTokens(), PUBLISHED_MARKER, String(doc.version));
    for (let i = 0; i < extras.tenantTokens.length; i += CHUNK) {
      multi.hset(keys.tenantTokens(), Object.fromEntries(extras.tenantTokens.slice(i, i + CHUNK).map((e) => [e.tokenHash, e.tenant])));
    }
  }
  multi.publish(keys.policyChannel(), String(doc.version));
  const results = await multi.exec();
  const failed = results?.find(([error]) => error);
  if (!results || failed) throw new Error(`publishing policy v${doc.version} failed: ${failed?.[0]?.message ?? "transaction aborted"}`);
}

/** What of the published state Redis holds: the live version (null: none), and whether the key index and token set are the published ones. */
export interface PublishedState {
  currentVersion: number | null;
  keyIndex: boolean;
  serviceTokens: boolean;
}

/** What is missing, by the names /readyz and the logs use. */
export function missingParts(state: PublishedState): ("policy" | "keyIndex" | "serviceTokens")[] {
  const out: ("policy" | "keyIndex" | "serviceTokens")[] = [];
  if (state.currentVersion === null) out.push("policy");
  if (!state.keyIndex) out.push("keyIndex");
  if (!state.serviceTokens) out.push("serviceTokens");
  return out;
}

/** Probes the published state: three small reads, no scans. Throws only when Redis fails. */
export async function readPublishedState(redis: RedisLike): Promise<PublishedState> {
  const [currentVersion, keyIndex, serviceTokens] = await Promise.all([
    readCurrentVersion(redis),
    redis.hexists(keys.keyIndex(), PUBLISHED_MARKER),
    redis.sismember(keys.serviceTokens(), PUBLISHED_MARKER),
  ]);
  return { currentVersion, keyIndex: keyIndex === 1, serviceTokens: serviceTokens === 1 };
}

export type ReadPolicyResult =
  | { status: "ok"; policy: CompiledPolicy }
  /** Nothing published yet. */
  | { status: "none" }
  /** A document is there but does not validate (or its checksum does not match): keep the last good one. */
  | { status: "invalid"; version: number | null; issues: PolicyIssue[] };

/** Reads and validates one published version. */
export async function readPolicyVersion(redis: RedisLike, version: number): Promise<ReadPolicyResult> {
  const text = await redis.get(keys.policyVersion(version));
  if (text === null) return { status: "invalid", version, issues: [{ path: "", message: `policy v${version} is missing` }] };
  const parsed = parseCompiledPolicy(text);
  if (!parsed.ok) return { status: "invalid", version, issues: parsed.issues };
  if (parsed.value.version !== version) {
    return { status: "invalid", version, issues: [{ path: "version", message: `expected ${version}, got ${parsed.value.version}` }] };
  }
  return { status: "ok", policy: parsed.value };
}

/** The live version number, or null before the first publish. */
export async function readCurrentVersion(redis: RedisLike): Promise<number | null> {
  const text = await redis.get(keys.policyCurrent());
  if (text === null) return null;
  const version = Number(text);
  return Number.isSafeInteger(version) && version > 0 ? version : null;
}

/** Reads the live document, validated. Throws only when Redis itself fails. */
export async function readCurrentPolicy(redis: RedisLike): Promise<ReadPolicyResult> {
  const text = await redis.get(keys.policyCurrent());
  if (text === null) return { status: "none" };
  const version = Number(text);
  if (!Number.isSafeInteger(version) || version < 1) {
    return { status: "invalid", version: null, issues: [{ path: "current", message: `not a version number: ${JSON.stringify(text)}` }] };
  }
  return readPolicyVersion(redis, version);
}

/** Adds one key to the live index right away (a key created between publishes works at once). */
export async function indexApiKey(redis: RedisLike, keyHash: string, tenant: string): Promise<void> {
  await redis.hset(keys.keyIndex(), keyHash, tenant);
}

/** Removes a revoked key from the live index and PUBLISHes its hash so every cache evicts it. */
export async function unindexApiKeys(redis: RedisLike, keyHashes: string[]): Promise<void> {
  if (keyHashes.length === 0) return;
  const multi = redis.multi();
  multi.hdel(keys.keyIndex(), ...keyHashes);
  for (const hash of keyHashes) multi.publish(keys.keyChannel(), hash);
  const results = await multi.exec();
  const failed = results?.find(([error]) => error);
  if (!results || failed) throw new Error(`revoking keys in Redis failed: ${failed?.[0]?.message ?? "transaction aborted"}`);
}

/** Adds or removes a service token in the set the decision API accepts. */
export async function setServiceToken(redis: RedisLike, tokenHash: string, active: boolean): Promise<void> {
  if (active) await redis.sadd(keys.serviceTokens(), tokenHash);
  else {
    await redis.srem(keys.serviceTokens(), tokenHash);
    await redis.hdel(keys.serviceTokenLastUsed(), tokenHash);
  }
}

/** A decision server's once-a-minute note of the service tokens it accepted (keys.serviceTokenLastUsed). */
export async function recordServiceTokensUsed(redis: RedisLike, tokenHashes: readonly string[], atMs: number): Promise<void> {
  if (tokenHashes.length === 0) return;
  await redis.hset(keys.serviceTokenLastUsed(), Object.fromEntries(tokenHashes.map((h) => [h, String(atMs)])));
}

/** When each of these service tokens was last accepted by a decision server (absent: not since it was created). */
export async function readServiceTokensLastUsed(redis: RedisLike, tokenHashes: readonly string[]): Promise<Map<string, number>> {
  if (tokenHashes.length === 0) return new Map();
  const values = await redis.hmget(keys.serviceTokenLastUsed(), ...tokenHashes);
  const out = new Map<string, number>();
  tokenHashes.forEach((h, i) => {
    const ms = Number(values[i]);
    if (values[i] !== null && Number.isSafeInteger(ms)) out.set(h, ms);
  });
  return out;
}

/** Adds (tenant: its slug) or removes (null) one tenant read token, at once. */
export async function setTenantToken(redis: RedisLike, tokenHash: string, tenant: string | null): Promise<void> {
  if (tenant !== null) await redis.hset(keys.tenantTokens(), tokenHash, tenant);
  else await redis.hdel(keys.tenantTokens(), tokenHash);
}

/** The tenant a read token (its sha256 hex) may read, or null: unknown, revoked, or the marker. */
export async function tenantOfToken(redis: RedisLike, tokenHash: string): Promise<string | null> {
  if (!/^[0-9a-f]{64}$/.test(tokenHash)) return null;
  return redis.hget(keys.tenantTokens(), tokenHash);
}
