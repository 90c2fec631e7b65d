/** POST /api/v1/policy/rollback `{"version": N}` — republish version N as a new version. */
import { z } from "zod";
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { controlPlaneRedis, db } from "@/lib/http/deps";
import { handle, invalidRequest } from "@/lib/http/errors";
import { rollbackPolicy } from "@/lib/services/rollback-policy";

const bodySchema = z.strictObject({
  version: z.number("expected an integer ≥ 1").int("expected an integer ≥ 1").min(1, "expected an integer ≥ 1"),
  note: z.string().max(500).optional(),
});

export async function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "policy.publish");
    const body = bodySchema.safeParse(await readJsonBody(request));
    if (!body.success) throw invalidRequest(body.error.issues, "version");
    const result = await rollbackPolicy(
      { db: db(), redis: controlPlaneRedis() },
      { actor: caller.actor, toVersion: body.data.version, note: body.data.note },
    );
    return Response.json(result);
  });
}
