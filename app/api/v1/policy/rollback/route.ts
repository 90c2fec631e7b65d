/** POST /api/v1/policy/rollback `{"version": N}` — republish version N as a new version. */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { controlPlaneRedis, db } from "@/lib/http/deps";
import { handle, invalidRequest } from "@/lib/http/errors";
import { rollbackPolicy, rollbackRequestSchema } from "@/lib/services/policy/rollback-policy";

export async function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "policy.publish");
    const body = rollbackRequestSchema.safeParse(await readJsonBody(request));
    if (!body.success) throw invalidRequest(body.error.issues, "version");
    const result = await rollbackPolicy(
      { db: db(), redis: controlPlaneRedis() },
      { actor: caller.actor, toVersion: body.data.version, note: body.data.note },
    );
    return Response.json(result);
  });
}
