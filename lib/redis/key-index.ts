/**
 * API key → tenant lookup for the decision path. The index is the Redis hash `keys.keyIndex()`
 * (sha256(api key) hex → tenant slug), written by publish. Lookups go through a bounded LRU cache:
 * hits cost no Redis command; a revocation PUBLISHes the key hash on `keys.keyChannel()` and every
 * decision server evicts it on receipt (well within 1 s). Negative answers (unknown key) are cached
 * briefly so a flood of bad keys cannot hammer Redis, but short enough that a new key works fast.
 *
 * A key this server has resolved stays resolvable (issue #17, defect 2): a found key is never
 * dropped for age, only re-validated in the background on its first use after `positiveTtlMs` or
 * after markStale (a new policy, a resubscription after lost messages); through a Redis outage, or
 * while Redis has lost the index, it keeps answering with the last tenant Redis gave. Only a
 * revocation (evict), a re-read that finds it gone from a published index, or LRU pressure removes it.
 *
 * A lost index (Redis restarted empty) is not "unknown key": the index carries PUBLISHED_MARKER
 * (lib/redis/keys.ts), and a lookup that finds neither the key nor the marker throws
 * KeyIndexMissingError, so the caller's failure mode applies instead of a 401 for every client.
 */
import { keys, PUBLISHED_MARKER } from "./keys";
import type { RedisClient as RedisLike } from "./client";
import { KeyIndexMissingError, sha256KeyHash, type KeyIndexPort } from "../decision/ports";

export { KeyIndexMissingError };

export type { RedisLike };

/** The digest keys and service tokens are indexed by: the engine's key hash (lib/decision/ports.ts). */
export const sha256Hex: (text: string) => string = sha256KeyHash;

/**
 * A bounded LRU map with per-entry expiry (insertion order of a Map is the recency order). A hit
 * moves its entry to the newest end only when it has fallen into the older half: hot keys then
 * cost one Map lookup instead of a delete and a re-insert on every request, and nothing in the
 * newer half can be evicted before it is looked at again.
 */
export class LruCache<V> {
  private readonly map = new Map<string, { value: V; expiresAtMs: number; stamp: number; epoch: number }>();
  /** Counts inserts and moves: an entry's stamp says how recently it was placed at the newest end. */
  private tick = 0;
  constructor(private readonly maxEntries: number) {}

  get(key: string, nowMs: number): V | undefined {
    return this.getEntry(key, nowMs)?.value;
  }

  /** The live entry (value and the epoch it was stored in), refreshed in recency like get. */
  getEntry(key: string, nowMs: number): { value: V; epoch: number } | undefined {
    const entry = this.map.get(key);
    if (!entry) return undefined;
    if (entry.expiresAtMs <= nowMs) {
      this.map.delete(key);
      return undefined;
    }
    if (this.tick - entry.stamp >= this.maxEntries / 2) {
      this.map.delete(key);
      entry.stamp = ++this.tick;
      this.map.set(key, entry);
    }
    return entry;
  }

  set(key: string, value: V, expiresAtMs: number, epoch = 0): void {
    this.map.delete(key);
    this.map.set(key, { value, expiresAtMs, stamp: ++this.tick, epoch });
    while (this.map.size > this.maxEntries) {
      const oldest = this.map.keys().next().value;
      if (oldest === undefined) break;
      this.map.delete(oldest);
    }
  }

  delete(key: string): boolean {
    return this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }
}

export interface KeyIndexOptions {
  /** Bound of the local cache (entries). */
  maxEntries?: number;
  /** After this long a found key is re-read in the background on its next use (it keeps answering meanwhile). */
  positiveTtlMs?: number;
  /** How long "unknown key" stays cached. */
  negativeTtlMs?: number;
  now?: () => number;
}

export interface KeyLookup {
  tenant: string | null;
  /** True when answered from the local cache (no Redis command). */
  cached: boolean;
}

/** A cached answer: the tenant (null: unknown key) and when Redis last confirmed it. */
interface CachedKey {
  tenant: string | null;
  confirmedAtMs: number;
}

export class KeyIndex implements KeyIndexPort {
  private readonly cache: LruCache<CachedKey>;
  private readonly positiveTtlMs: number;
  private readonly negativeTtlMs: number;
  private readonly now: () => number;
  private readonly maxEntries: number;
  /** Bumped by every eviction and clear: a warm-up or refresh that raced one is dropped. */
  private generation = 0;
  /** Bumped by markStale: entries stored in an older epoch are answered, then re-read in the background. */
  private epoch = 0;
  /** Stale key hashes to re-read with the next background HMGET. */
  private readonly pending = new Set<string>();
  private refreshScheduled = false;
  /** After a failed refresh, none before this time (Redis down must not mean one HMGET per tick). */
  private refreshPausedUntilMs = 0;

  constructor(
    private readonly redis: RedisLike,
    options: KeyIndexOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? 200_000;
    this.cache = new LruCache(this.maxEntries);
    this.positiveTtlMs = options.positiveTtlMs ?? 300_000;
    this.negativeTtlMs = options.negativeTtlMs ?? 2_000;
    this.now = options.now ?? Date.now;
  }

  /** Looks up a key by its sha256 hex. Throws when Redis fails and the cache has no answer. */
  async lookup(keyHash: string): Promise<KeyLookup> {
    const hit = this.peek(keyHash);
    if (hit !== undefined) return { tenant: hit, cached: true };
    return { tenant: await this.fetch(keyHash), cached: false };
  }

  /**
   * The cached answer: a slug, null (known unknown), or undefined (not cached). No I/O on the
   * request's path: an entry from before the last markStale, or a found key last confirmed more
   * than positiveTtlMs ago, is still answered, and queued for a background re-read.
   */
  peek(keyHash: string): string | null | undefined {
    const nowMs = this.now();
    const entry = this.cache.getEntry(keyHash, nowMs);
    if (entry === undefined) return undefined;
    const { tenant, confirmedAtMs } = entry.value;
    if (entry.epoch !== this.epoch || (tenant !== null && nowMs - confirmedAtMs >= this.positiveTtlMs)) this.queueRefresh(keyHash);
    return tenant;
  }

  /**
   * Reads the index in Redis (one HMGET of the key and the marker) and caches the answer. Throws
   * when Redis fails, and KeyIndexMissingError when Redis has neither the key nor the marker.
   */
  async fetch(keyHash: string): Promise<string | null> {
    const [tenant, marker] = await this.redis.hmget(keys.keyIndex(), keyHash, PUBLISHED_MARKER);
    if (tenant === null && marker === null) throw new KeyIndexMissingError();
    this.store(keyHash, tenant ?? null, this.now());
    return tenant ?? null;
  }

  private store(keyHash: string, tenant: string | null, nowMs: number): void {
    // Found keys never expire from the cache (see the top of the file); unknown ones do, soon.
    this.cache.set(keyHash, { tenant, confirmedAtMs: nowMs }, tenant === null ? nowMs + this.negativeTtlMs : Infinity, this.epoch);
  }

  /**
   * A new policy version rewrote the index in Redis (a deleted tenant's keys are gone; a key whose
   * revocation message was lost is gone too). Instead of dropping every cached key — with an index
   * too large to warm whole, each one would then wait on an HGET on its next request, a miss storm
   * after every publish — every entry is marked stale: it still answers, and its first use queues
   * it for a batched background HMGET that corrects it. Revocations announced by PUBLISH still
   * evict at once (evict).
   */
  markStale(): void {
    this.epoch++;
    this.generation++;
  }

  private queueRefresh(keyHash: string): void {
    this.pending.add(keyHash);
    if (this.refreshScheduled) return;
    this.refreshScheduled = true;
    setImmediate(() => void this.refresh());
  }

  /** Re-reads the queued stale keys, up to 1,000 per HMGET, one batch after the other. */
  private async refresh(): Promise<void> {
    try {
      while (this.pending.size > 0 && this.now() >= this.refreshPausedUntilMs) {
        const batch: string[] = [];
        for (const keyHash of this.pending) {
          batch.push(keyHash);
          this.pending.delete(keyHash);
          if (batch.length === 1_000) break;
        }
        const generation = this.generation;
        const epoch = this.epoch;
        let tenants: (string | null)[];
        try {
          tenants = await this.redis.hmget(keys.keyIndex(), ...batch, PUBLISHED_MARKER);
        } catch {
          // Stale entries keep answering; they queue again on their next use after the pause.
          this.refreshPausedUntilMs = this.now() + 1_000;
          this.pending.clear();
          return;
        }
        // An eviction meanwhile may concern one of these: its fresh answer must not be overwritten,
        // so this batch is dropped (its keys queue again on their next use). A newer markStale
        // makes the answers stale already: also dropped.
        if (generation !== this.generation || epoch !== this.epoch) continue;
        const published = tenants[batch.length] !== null;
        const nowMs = this.now();
        for (let i = 0; i < batch.length; i++) {
          // A key missing from an index Redis lost is not gone: keep answering what we had.
          if (tenants[i] !== null || published) this.store(batch[i]!, tenants[i] ?? null, nowMs);
        }
        if (!published) {
          this.refreshPausedUntilMs = nowMs + 1_000;
          this.pending.clear();
          return;
        }
      }
    } finally {
      this.refreshScheduled = false;
      if (this.pending.size > 0 && this.now() >= this.refreshPausedUntilMs) this.queueRefresh(this.pending.values().next().value!);
    }
  }

  /**
   * Loads the whole index into the cache when it holds at most `limit` keys (HLEN, then HSCAN in
   * pages of 1,000, so Redis is never blocked by one large reply), so a fresh server, or one that
   * just dropped its cache for a new policy, answers its first requests without a lookup each: on a
   * loaded machine a cold lookup can miss the store budget and send a request down the failure
   * path. Returns the number of keys loaded (0 when the index is too large, or when a revocation
   * or clear arrived meanwhile: then nothing is kept).
   */
  async warm(limit = 50_000): Promise<number> {
    const generation = this.generation;
    const size = await this.redis.hlen(keys.keyIndex());
    if (size === 0 || size > Math.min(limit, this.maxEntries) + 1) return 0;
    const all = new Map<string, string>();
    let cursor = "0";
    do {
      const [next, flat] = await this.redis.hscan(keys.keyIndex(), cursor, "COUNT", 1_000);
      for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i] !== PUBLISHED_MARKER) all.set(flat[i]!, flat[i + 1]!);
      cursor = next;
      if (generation !== this.generation || all.size > limit) return 0;
    } while (cursor !== "0");
    const nowMs = this.now();
    let loaded = 0;
    for (const [keyHash, tenant] of all) {
      // A key looked up meanwhile keeps its fresher answer; a stale one takes this one.
      const cached = this.cache.getEntry(keyHash, nowMs);
      if (cached !== undefined && cached.epoch === this.epoch) continue;
      this.store(keyHash, tenant, nowMs);
      loaded++;
    }
    return loaded;
  }

  /** Drops one key hash from the cache (a revocation message). */
  evict(keyHash: string): void {
    this.generation++;
    this.cache.delete(keyHash);
  }

  /** Drops everything (tests; the decision server marks entries stale instead, so that they keep answering). */
  clear(): void {
    this.generation++;
    this.cache.clear();
  }

  get size(): number {
    return this.cache.size;
  }
}
