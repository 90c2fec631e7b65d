/** POST /api/v1/policy/approvals/{id}/reject — reject a pending request; body `{"reason": "…"}` (required). Nothing is published. */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { db } from "@/lib/http/deps";
import { handle, invalidRequest } from "@/lib/http/errors";
import { rejectBodySchema, rejectRequest } from "@/lib/services/approval/decide-approval";

export async function POST(request: Request, context: { params: Promise<{ id: string }> }): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "policy.publish");
    const body = rejectBodySchema.safeParse(await readJsonBody(request));
    if (!body.success) throw invalidRequest(body.error.issues, "body");
    const { id } = await context.params;
    return Response.json(await rejectRequest({ db: db() }, id, { actor: caller.actor, reason: body.data.reason }));
  });
}
