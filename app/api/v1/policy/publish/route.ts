/**
 * POST /api/v1/policy/publish — compile the draft and make it live. Optional body `{"note": "…"}`.
 * Under the policy's approval rule, a publish beyond its blast radius answers 202 with
 * `status: "approval_pending"` and the request: nothing is published until another user approves it.
 */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { controlPlaneRedis, db } from "@/lib/http/deps";
import { handle, invalidRequest } from "@/lib/http/errors";
import { publishPolicy, publishRequestSchema } from "@/lib/services/policy/publish-policy";

export async function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "policy.publish");
    const body = publishRequestSchema.safeParse(await readJsonBody(request));
    if (!body.success) throw invalidRequest(body.error.issues, "body");
    const result = await publishPolicy({ db: db(), redis: controlPlaneRedis() }, { actor: caller.actor, role: caller.role, note: body.data.note });
    return Response.json(result, { status: result.status === "approval_pending" ? 202 : 200 });
  });
}
