/**
 * A key's page: rotate an API key. A new key is issued (shown once, as by createApiKey), and the old
 * one keeps working for the overlap, while clients move to the new one; then the worker revokes it
 * (lib/jobs/expire-api-keys.ts). An overlap of 0 revokes the old key at once. One transaction
 * creates the new key, links it to the old one and sets the old one's expiry, with a `key.rotate`
 * audit entry beside the new key's `key.create`; if any step fails, nothing changes.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { writeAudit } from "../../db/audit";
import type { RedisLike } from "../../redis/policy";
import { createApiKey, type CreatedApiKey } from "./create-api-key";
import type { Editor } from "../policy/edit-policy";
import { ServiceError } from "../errors";
import { revokeApiKey } from "./revoke-api-key";

/** The longest overlap: 30 days, in minutes. */
export const MAX_OVERLAP_MINUTES = 30 * 24 * 60;

export const rotateInputSchema = z.strictObject({
  tenant: z.string().min(1).max(63),
  keyId: z.string().regex(/^key_[0-9a-f]{20}$/, "expected a key id (key_…)"),
  overlapMinutes: z
    .number("expected a number of minutes")
    .int("expected whole minutes")
    .min(0, "expected 0 (revoke the old key now) or more minutes")
    .max(MAX_OVERLAP_MINUTES, "expected at most 30 days (43,200 minutes)"),
});

export interface RotatedApiKey {
  created: CreatedApiKey;
  old: { id: string; name: string; prefix: string };
  /** When the old key stops working (ISO); now for an overlap of 0. */
  oldExpiresAt: string;
}

function parse(raw: unknown): z.output<typeof rotateInputSchema> {
  const parsed = rotateInputSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue.path.map(String).join(".") || "body";
    throw new ServiceError("invalid_request", `${field}: ${issue.message}`, { field });
  }
  return parsed.data;
}

export async function rotateApiKey(deps: { db: PrismaClient; redis?: RedisLike | null }, raw: unknown, editor: Editor, nowMs = Date.now()): Promise<RotatedApiKey> {
  const input = parse(raw);
  const old = await deps.db.apiKey.findFirst({
    where: { id: input.keyId, tenant: { slug: input.tenant } },
    select: { id: true, name: true, prefix: true, revokedAt: true, expiresAt: true },
  });
  if (!old) throw new ServiceError("not_found", `tenant ${input.tenant} has no key ${input.keyId}`, { field: "keyId" });
  if (old.revokedAt) throw new ServiceError("conflict", `key ${old.name} is revoked: create a new key instead`, { field: "keyId" });
  const successor = await deps.db.apiKey.findFirst({ where: { rotatedFromId: old.id, revokedAt: null }, select: { name: true } });
  if (successor) throw new ServiceError("conflict", `key ${old.name} was already rotated to ${successor.name}; rotate ${successor.name} instead`, { field: "keyId" });
  const expiresAt = new Date(nowMs + input.overlapMinutes * 60_000);
  // The new key's name says what it replaces; the suffix keeps a second rotation's name free.
  const name = `${old.name.slice(0, 52)}-r${randomBytes(3).toString("hex")}`;
  const created = await createApiKey(deps, { tenant: input.tenant, name }, editor, {
    afterCreate: async (tx, keyId) => {
      await tx.apiKey.update({ where: { id: keyId }, data: { rotatedFromId: old.id } });
      if (input.overlapMinutes > 0) await tx.apiKey.update({ where: { id: old.id }, data: { expiresAt } });
      await writeAudit(tx, {
        actor: editor.actor,
        action: "key.rotate",
        entity: "key",
        entityId: old.id,
        before: { tenant: input.tenant, name: old.name, prefix: old.prefix, expiresAt: old.expiresAt?.toISOString() ?? null },
        after: { tenant: input.tenant, name: old.name, expiresAt: expiresAt.toISOString(), overlapMinutes: input.overlapMinutes, replacedBy: { id: keyId, name } },
      });
    },
  });
  if (input.overlapMinutes === 0) await revokeApiKey(deps, { tenant: input.tenant, name: old.name, nowMs }, editor);
  return { created, old: { id: old.id, name: old.name, prefix: old.prefix }, oldExpiresAt: expiresAt.toISOString() };
}
