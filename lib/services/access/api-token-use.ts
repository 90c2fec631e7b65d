/**
 * The Settings page's tokens with a true "last used": admin tokens are stamped by the admin API on
 * each call (lib/http/admin-auth.ts); service tokens by the decision servers, which note the tokens
 * they accepted and write them once a minute, off the decision path (to Redis, or in single-node
 * mode to Postgres). The later of the two is shown.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { readServiceTokensLastUsed, type RedisLike } from "../../redis/policy";

export interface ApiTokenRow {
  id: string;
  kind: "service" | "admin" | "tenant";
  name: string;
  prefix: string;
  role: string;
  createdBy: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export async function listApiTokensWithUse(deps: { db: PrismaClient; redis: RedisLike | null }): Promise<ApiTokenRow[]> {
  const rows = await deps.db.apiToken.findMany({
    orderBy: [{ revokedAt: { sort: "desc", nulls: "first" } }, { createdAt: "desc" }],
    select: { id: true, kind: true, name: true, hash: true, prefix: true, role: true, createdBy: true, createdAt: true, lastUsedAt: true, revokedAt: true },
  });
  const service = rows.filter((r) => r.kind === "service" && r.revokedAt === null).map((r) => r.hash);
  // Redis down: the page still lists the tokens, with what Postgres knows.
  const seen = deps.redis && service.length > 0 ? await readServiceTokensLastUsed(deps.redis, service).catch(() => new Map<string, number>()) : new Map<string, number>();
  return rows.map(({ hash, ...r }) => {
    const ms = seen.get(hash);
    const lastUsedAt = ms !== undefined && (r.lastUsedAt === null || ms > r.lastUsedAt.getTime()) ? new Date(ms) : r.lastUsedAt;
    return { ...r, lastUsedAt };
  });
}
