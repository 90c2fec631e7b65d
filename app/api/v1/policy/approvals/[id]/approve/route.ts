/**
 * POST /api/v1/policy/approvals/{id}/approve — approve a pending request and do what it asks
 * (publish, start the rollout, or move it to the step). Optional body `{"reason": "…"}`. Refused
 * (403) to the request's own author, whatever the token's role.
 */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { controlPlaneRedis, db } from "@/lib/http/deps";
import { handle, invalidRequest } from "@/lib/http/errors";
import { approveBodySchema, approveRequest } from "@/lib/services/approval/decide-approval";

export async function POST(request: Request, context: { params: Promise<{ id: string }> }): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "policy.publish");
    const body = approveBodySchema.safeParse(await readJsonBody(request));
    if (!body.success) throw invalidRequest(body.error.issues, "body");
    const { id } = await context.params;
    return Response.json(await approveRequest({ db: db(), redis: controlPlaneRedis() }, id, { actor: caller.actor, reason: body.data.reason }));
  });
}
