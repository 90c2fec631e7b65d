/**
 * Single-node API key index: sha256(api key) hex → tenant slug, from the ApiKey table (unrevoked
 * keys, joined to their tenant) instead of the Redis hash. The whole index is held in memory, so
 * a lookup never waits for Postgres: `peek` always answers once the first load is done.
 *
 * Freshness: every `pollMs` (500 ms by default in the decision server) one cheap aggregate query
 * reads a signature of the ApiKey and Tenant tables (row counts, revoked count, newest creation,
 * newest revocation, newest tenant change). When it differs from the last load's, the index is
 * loaded again whole. A revoked key therefore stops working within a poll and a load (≈ 0.5–1 s),
 * like the Redis path's PUBLISH; a key created or a tenant deleted (its keys cascade) likewise.
 * The signature is read before the load, so a change racing the load is picked up by the next poll.
 *
 * When Postgres is unreachable the last loaded index stays in force (keys keep working,
 * revocations wait) and the outage is logged once. Sized for a single node: the index costs about
 * 150 bytes per key, the signature a scan of ApiKey per poll (tens of ms at 100,000 keys).
 */
import type { Db } from "../db/client";
import { Poller } from "../net/poller";
import type { KeyIndexPort } from "../decision/ports";
import { messageOf, withQueryTimeout } from "./timeout";

export interface PostgresKeyIndexOptions {
  db: Db;
  pollMs: number;
  log?: (message: string) => void;
}

export class KeyIndexNotLoadedError extends Error {
  constructor() {
    super("the API key index is not loaded yet");
  }
}

export class PostgresKeyIndex implements KeyIndexPort {
  private index: Map<string, string> | null = null;
  private signature: string | null = null;
  private readonly poller: Poller;
  private reachable = true;

  constructor(private readonly options: PostgresKeyIndexOptions) {
    this.poller = new Poller(() => this.load(), options.pollMs);
  }

  /** True once the index has been loaded (the server is not ready before). */
  get loaded(): boolean {
    return this.index !== null;
  }

  get size(): number {
    return this.index?.size ?? 0;
  }

  /** The tenant slug, null for an unknown or revoked key; undefined only before the first load. */
  peek(keyHash: string): string | null | undefined {
    const index = this.index;
    if (index === null) return undefined;
    return index.get(keyHash) ?? null;
  }

  /** Only reached before the first load: tries to load, else throws (the failure mode decides). */
  async fetch(keyHash: string): Promise<string | null> {
    if (this.index === null) await this.refresh();
    const hit = this.peek(keyHash);
    if (hit === undefined) throw new KeyIndexNotLoadedError();
    return hit;
  }

  async start(): Promise<void> {
    await this.poller.start();
  }

  /** Reloads the index when the tables changed. Never throws. */
  refresh(): Promise<void> {
    return this.poller.refresh();
  }

  private async load(): Promise<void> {
    const { db } = this.options;
    try {
      const [sig] = await withQueryTimeout(
        db.$queryRawUnsafe<{ signature: string }[]>(
          `SELECT concat_ws('|', k."keys", k."revoked", k."created", k."revokedMax", t."tenants", t."updated") AS "signature"
             FROM (SELECT count(*) AS "keys", count("revokedAt") AS "revoked", max("createdAt") AS "created", max("revokedAt") AS "revokedMax"
                     FROM "ApiKey") k,
                  (SELECT count(*) AS "tenants", max("updatedAt") AS "updated" FROM "Tenant") t`,
        ),
        "reading the key index signature",
      );
      const signature = sig?.signature ?? "";
      if (!this.reachable) this.options.log?.("key index: PostgreSQL reachable again");
      this.reachable = true;
      if (this.index !== null && signature === this.signature) return;
      const rows = await withQueryTimeout(
        db.$queryRawUnsafe<{ hash: string; slug: string }[]>(
          `SELECT k."hash", t."slug" FROM "ApiKey" k JOIN "Tenant" t ON t."id" = k."tenantId" WHERE k."revokedAt" IS NULL`,
        ),
        "loading the key index",
      );
      const index = new Map<string, string>();
      for (const r of rows) index.set(r.hash, r.slug);
      const first = this.index === null;
      this.index = index;
      this.signature = signature;
      if (first) this.options.log?.(`key index loaded (${index.size} keys)`);
    } catch (error) {
      if (this.reachable) this.options.log?.(`key index refresh failed (keeping ${this.size} keys): ${messageOf(error)}`);
      this.reachable = false;
    }
  }

  stop(): void {
    this.poller.stop();
  }
}
