/**
 * Single-node policy source: the published PolicyVersion rows in Postgres instead of Redis's
 * `policy:current` and PUBLISH. Same contract as lib/redis/policy-source.ts (PolicyPort, lib/decision/ports.ts): load
 * at start, poll, and never replace the last good document with a bad one (docs/pitfalls.md: a broken
 * config must never silently mean "no limit"); `current` stays null (so `/readyz` is 503) until a
 * valid version is loaded.
 *
 * One small query per poll reads the newest version number and the hashes of the unrevoked
 * service tokens (ApiToken, kind `service`), so a token created or revoked in the control plane
 * is accepted or refused within a poll, as the Redis set is in Redis mode. A newer version is then
 * read and checked with the same schema and checksum every Redis reader applies; an invalid one is
 * reported once and skipped (versions are immutable). A fresh process whose newest version is
 * invalid starts from the newest valid one before it (the last good document across restarts).
 */
import type { Db } from "../db/client";
import type { MissingPart, PolicyPort } from "../decision/ports";
import type { CompiledPolicy } from "../policy/compiled";
import { parseCompiledPolicy } from "../policy/compiled-schema";
import { Poller } from "../net/poller";
import { messageOf, withQueryTimeout } from "./timeout";

/** How many older versions a fresh process tries when the newest one is invalid. */
const FALLBACK_VERSIONS = 10;

export interface PostgresPolicySourceOptions {
  db: Db;
  /** Poll interval (ms). */
  pollMs: number;
  onPolicy?: (doc: CompiledPolicy, previous: CompiledPolicy | null) => void;
  /** sha256 hex of every unrevoked service token, after every successful poll. */
  onServiceTokens?: (hashes: Set<string>) => void;
  /** The tenant read tokens (sha256 hex → tenant slug, not revoked), polled with the service tokens (GET /v1/usage). */
  onTenantTokens?: (tenantOf: Map<string, string>) => void;
  log?: (message: string) => void;
}

type Checked = { ok: true; doc: CompiledPolicy } | { ok: false; why: string };

export class PostgresPolicySource implements PolicyPort {
  private doc: CompiledPolicy | null = null;
  private readonly poller: Poller;
  /** Versions that failed validation, so each is reported once. */
  private readonly rejected = new Set<number>();
  /** False after a failed poll, so an outage is logged once, not twice a second. */
  private reachable = true;
  private lastOkAtMs = 0;

  constructor(private readonly options: PostgresPolicySourceOptions) {
    this.poller = new Poller(() => this.load(), options.pollMs);
  }

  /** Postgres is the record itself: nothing can be missing from it that a restore would bring back. */
  get missing(): readonly MissingPart[] {
    return [];
  }

  get current(): CompiledPolicy | null {
    return this.doc;
  }

  /** Whether the last poll reached Postgres (shown by /readyz; decisions go on without it). */
  get postgresOk(): boolean {
    return this.reachable && this.lastOkAtMs > 0;
  }

  async start(): Promise<void> {
    await this.poller.start();
  }

  refresh(): Promise<void> {
    return this.poller.refresh();
  }

  private async load(): Promise<void> {
    const { db } = this.options;
    try {
      const [row] = await withQueryTimeout(
        db.$queryRawUnsafe<{ version: number | null; tokens: string[] | null; tenantTokens: Record<string, string> | null }[]>(
          `SELECT (SELECT max("version") FROM "PolicyVersion") AS "version",
                  (SELECT array_agg("hash") FROM "ApiToken" WHERE "kind" = 'service' AND "revokedAt" IS NULL) AS "tokens",
                  (SELECT json_object_agg("hash", "tenant") FROM "ApiToken" WHERE "kind" = 'tenant' AND "revokedAt" IS NULL AND "tenant" IS NOT NULL) AS "tenantTokens"`,
        ),
        "reading the policy version",
      );
      if (!this.reachable) this.options.log?.("PostgreSQL reachable again");
      this.reachable = true;
      this.lastOkAtMs = Date.now();
      this.options.onServiceTokens?.(new Set(row?.tokens ?? []));
      this.options.onTenantTokens?.(new Map(Object.entries(row?.tenantTokens ?? {})));
      const latest = row?.version ?? null;
      // Versions only grow (rollback republishes as a new one): never step back to an older one.
      if (latest === null || (this.doc && latest <= this.doc.version) || this.rejected.has(latest)) return;
      const checked = await this.read(latest);
      if (checked.ok) return this.install(checked.doc);
      this.rejected.add(latest);
      this.options.log?.(`policy v${latest} rejected (${checked.why}); keeping v${this.doc?.version ?? 0}`);
      if (this.doc === null) await this.fallBack(latest);
    } catch (error) {
      if (this.reachable) this.options.log?.(`policy refresh failed (keeping v${this.doc?.version ?? 0}): ${messageOf(error)}`);
      this.reachable = false;
    }
  }

  /** A fresh process: the newest valid version older than `latest`. */
  private async fallBack(latest: number): Promise<void> {
    for (let v = latest - 1; v >= Math.max(1, latest - FALLBACK_VERSIONS); v--) {
      if (this.rejected.has(v)) continue;
      const checked = await this.read(v);
      if (checked.ok) {
        this.options.log?.(`starting from v${v}, the newest valid version`);
        return this.install(checked.doc);
      }
      this.rejected.add(v);
    }
  }

  private async read(version: number): Promise<Checked> {
    const row = await withQueryTimeout(
      this.options.db.policyVersion.findUnique({ where: { version }, select: { document: true, checksum: true } }),
      `reading policy v${version}`,
    );
    if (!row) return { ok: false, why: "missing" };
    const parsed = parseCompiledPolicy(row.document);
    if (!parsed.ok) return { ok: false, why: parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; ") };
    if (parsed.value.version !== version) return { ok: false, why: `version: expected ${version}, got ${parsed.value.version}` };
    if (parsed.value.checksum !== row.checksum) return { ok: false, why: "checksum: differs from the PolicyVersion row" };
    return { ok: true, doc: parsed.value };
  }

  private install(doc: CompiledPolicy): void {
    const previous = this.doc;
    this.doc = doc;
    this.options.onPolicy?.(doc, previous);
  }

  stop(): void {
    this.poller.stop();
  }
}
