/**
 * A key's own page (/tenants/<slug>/keys/<id>): the key (prefix, created, revoked, expiry, the key
 * it replaced and the one that replaced it), its usage over a range (decisions, denials by the
 * decision API's reason) and when it was last used, all from the rollups. The tenant is in the
 * lookup: a key of another tenant is not found, as a missing one.
 */
import { z } from "zod";
import type { Db } from "../../db/client";
import { keyLastUsed, keyUsage, type KeyUsage } from "../../db/key-usage-repo";
import type { Granularity } from "../../db/usage-repo";
import { KEY_PREFIX_LENGTH } from "../../decision/ports";

export const KEY_RANGES = { "24h": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000 } as const;
export type KeyRange = keyof typeof KEY_RANGES;
export const keyRangeSchema = z.enum(Object.keys(KEY_RANGES) as [KeyRange, ...KeyRange[]], "expected 24h, 7d or 30d");

export type KeyStatus = "active" | "expiring" | "revoked";

export interface ApiKeyPage {
  id: string;
  tenant: { slug: string; name: string };
  name: string;
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
  expiresAt: Date | null;
  status: KeyStatus;
  rotatedFrom: { id: string; name: string } | null;
  rotatedTo: { id: string; name: string; revoked: boolean }[];
  usage: KeyUsage & { fromMs: number; toMs: number; range: KeyRange };
  /** The start of the last minute (or hour, day) with a decision of this key; null: none recorded. */
  lastUsed: { atMs: number; granularity: Granularity } | null;
}

export async function apiKeyPage(db: Db, f: { tenant: string; keyId: string; range: KeyRange; nowMs: number }): Promise<ApiKeyPage | null> {
  const key = await db.apiKey.findFirst({
    where: { id: f.keyId, tenant: { slug: f.tenant } },
    include: { tenant: { select: { slug: true, name: true } } },
  });
  if (!key) return null;
  // The usage counters name a key by the first hex characters of its SHA-256 (lib/redis/usage.ts).
  const keyPrefix = key.hash.slice(0, KEY_PREFIX_LENGTH);
  // Complete minutes only: the current one is still being counted.
  const toMs = Math.floor(f.nowMs / 60_000) * 60_000;
  const fromMs = toMs - KEY_RANGES[f.range];
  const [usage, lastUsed, rotatedFrom, rotatedTo] = await Promise.all([
    keyUsage(db, { tenant: key.tenant.slug, keyPrefix, fromMs, toMs }),
    keyLastUsed(db, { tenant: key.tenant.slug, keyPrefix }),
    key.rotatedFromId ? db.apiKey.findFirst({ where: { id: key.rotatedFromId, tenantId: key.tenantId }, select: { id: true, name: true } }) : Promise.resolve(null),
    db.apiKey.findMany({ where: { rotatedFromId: key.id, tenantId: key.tenantId }, select: { id: true, name: true, revokedAt: true }, orderBy: { createdAt: "asc" } }),
  ]);
  return {
    id: key.id,
    tenant: key.tenant,
    name: key.name,
    prefix: key.prefix,
    createdAt: key.createdAt,
    revokedAt: key.revokedAt,
    expiresAt: key.expiresAt,
    status: key.revokedAt ? "revoked" : key.expiresAt ? "expiring" : "active",
    rotatedFrom,
    rotatedTo: rotatedTo.map((k) => ({ id: k.id, name: k.name, revoked: k.revokedAt !== null })),
    usage: { ...usage, fromMs, toMs, range: f.range },
    lastUsed,
  };
}
