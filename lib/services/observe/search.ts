/**
 * The shell's search box: tenants by slug or name, API keys by their display prefix (`sk_test_acme`,
 * or any part of it: `acme`) or name. Only the prefix is stored, never the secret after it, so a
 * pasted whole key is cut to its prefix first — and looked up exactly by its SHA-256, the one
 * thing stored of the secret: `exact` is that key (or null), which a prefix match cannot tell.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { DISPLAY_PREFIX_LENGTH, hashSecret } from "../access/secrets";

export const searchQuerySchema = z.string().trim().min(1, "type at least one character").max(100, "at most 100 characters");

export interface SearchResults {
  query: string;
  tenants: { slug: string; name: string; tier: string; status: string }[];
  keys: { id: string; tenant: string; name: string; prefix: string; revoked: boolean }[];
  /** A query longer than a prefix: the key it is exactly (by hash), or null when no key is. Undefined for shorter queries. */
  exact?: { id: string; tenant: string; name: string; prefix: string; revoked: boolean } | null;
}

const LIMIT = 20;

export async function search(db: PrismaClient, query: string): Promise<SearchResults> {
  const q = searchQuerySchema.parse(query);
  const prefix = q.slice(0, DISPLAY_PREFIX_LENGTH);
  const whole = q.length > DISPLAY_PREFIX_LENGTH;
  const [tenants, keys, exact] = await Promise.all([
    db.tenant.findMany({
      where: { OR: [{ slug: { contains: q.toLowerCase() } }, { name: { contains: q, mode: "insensitive" } }] },
      orderBy: { slug: "asc" },
      take: LIMIT,
      select: { slug: true, name: true, status: true, tier: { select: { name: true } } },
    }),
    db.apiKey.findMany({
      where: { OR: [{ prefix: { contains: prefix } }, { name: { contains: q, mode: "insensitive" } }] },
      orderBy: [{ revokedAt: { sort: "desc", nulls: "first" } }, { prefix: "asc" }],
      take: LIMIT,
      select: { id: true, name: true, prefix: true, revokedAt: true, tenant: { select: { slug: true } } },
    }),
    whole ? db.apiKey.findUnique({ where: { hash: hashSecret(q) }, select: { id: true, name: true, prefix: true, revokedAt: true, tenant: { select: { slug: true } } } }) : null,
  ]);
  return {
    query: q,
    tenants: tenants.map((t) => ({ slug: t.slug, name: t.name, tier: t.tier.name, status: t.status })),
    keys: keys.map((k) => ({ id: k.id, tenant: k.tenant.slug, name: k.name, prefix: k.prefix, revoked: k.revokedAt !== null })),
    ...(whole ? { exact: exact ? { id: exact.id, tenant: exact.tenant.slug, name: exact.name, prefix: exact.prefix, revoked: exact.revokedAt !== null } : null } : {}),
  };
}
