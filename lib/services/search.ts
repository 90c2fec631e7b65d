/**
 * The shell's search box: tenants by slug or name, API keys by their display prefix (`sk_test_acme`,
 * or any part of it: `acme`) or name. Only the prefix is stored, never the secret after it, so a
 * pasted whole key is cut to its prefix first.
 */
import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";
import { DISPLAY_PREFIX_LENGTH } from "./secrets";

export const searchQuerySchema = z.string().trim().min(1, "type at least one character").max(100, "at most 100 characters");

export interface SearchResults {
  query: string;
  tenants: { slug: string; name: string; tier: string; status: string }[];
  keys: { tenant: string; name: string; prefix: string; revoked: boolean }[];
}

const LIMIT = 20;

export async function search(db: PrismaClient, query: string): Promise<SearchResults> {
  const q = searchQuerySchema.parse(query);
  const prefix = q.slice(0, DISPLAY_PREFIX_LENGTH);
  const [tenants, keys] = await Promise.all([
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
      select: { name: true, prefix: true, revokedAt: true, tenant: { select: { slug: true } } },
    }),
  ]);
  return {
    query: q,
    tenants: tenants.map((t) => ({ slug: t.slug, name: t.name, tier: t.tier.name, status: t.status })),
    keys: keys.map((k) => ({ tenant: k.tenant.slug, name: k.name, prefix: k.prefix, revoked: k.revokedAt !== null })),
  };
}
