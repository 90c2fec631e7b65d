/**
 * Where quota notifications go: one endpoint per tenant, or the operator's (`*`) for tenants
 * without their own. Setting an endpoint checks its URL with the alert webhook's SSRF rules and
 * gives it a fresh signing secret, returned once (it signs every delivery: lib/services/billing/quota-webhook.ts).
 * Audited without the secret.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { writeAudit } from "../../db/audit";
import { newId } from "../../db/policy-repo";
import { ServiceError } from "../errors";
import { checkEndpointUrl } from "./quota-webhook";
import { displayPrefix, generateSecret } from "../access/secrets";

/** The operator's endpoint's scope. */
export const OPERATOR_SCOPE = "*";

export const webhookEndpointInputSchema = z.strictObject({
  scope: z.union([z.literal(OPERATOR_SCOPE), z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "expected a tenant slug or *")]),
  url: z.string().max(2000),
});

export async function setWebhookEndpoint(
  db: PrismaClient,
  input: z.input<typeof webhookEndpointInputSchema>,
  actor: string,
  options: { allowPrivate: boolean },
): Promise<{ id: string; scope: string; url: string; secret: string }> {
  const parsed = webhookEndpointInputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ServiceError("invalid_request", `${String(issue.path[0])}: ${issue.message}`, { field: String(issue.path[0]) });
  }
  const { scope, url } = parsed.data;
  try {
    await checkEndpointUrl(url, options.allowPrivate);
  } catch (error) {
    throw new ServiceError("invalid_request", `url: ${error instanceof Error ? error.message : String(error)}`, { field: "url" });
  }
  if (scope !== OPERATOR_SCOPE && !(await db.tenant.findUnique({ where: { slug: scope }, select: { id: true } }))) {
    throw new ServiceError("not_found", `tenant: no tenant ${JSON.stringify(scope)}`, { field: "tenant" });
  }
  const secret = generateSecret("whsec");
  return db.$transaction(async (tx) => {
    const before = await tx.webhookEndpoint.findUnique({ where: { scope } });
    const id = before?.id ?? newId("webhookEndpoint");
    await tx.webhookEndpoint.upsert({ where: { scope }, create: { id, scope, url, secret, createdBy: actor }, update: { url, secret, createdBy: actor } });
    await writeAudit(tx, {
      actor, action: "webhook_endpoint.set", entity: "webhook_endpoint", entityId: id,
      before: before ? { scope, url: before.url, secret: displayPrefix(before.secret) } : null,
      after: { scope, url, secret: displayPrefix(secret) },
    });
    return { id, scope, url, secret };
  });
}

export async function removeWebhookEndpoint(db: PrismaClient, scope: string, actor: string): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const before = await tx.webhookEndpoint.findUnique({ where: { scope } });
    if (!before) return false;
    await tx.webhookEndpoint.delete({ where: { scope } });
    await writeAudit(tx, { actor, action: "webhook_endpoint.remove", entity: "webhook_endpoint", entityId: before.id, before: { scope, url: before.url }, after: null });
    return true;
  });
}
