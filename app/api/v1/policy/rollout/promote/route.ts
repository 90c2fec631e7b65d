/** POST /api/v1/policy/rollout/promote — move the running rollout to its next step now (the last publishes to everyone; resumes a paused one). Optional body `{"reason": "…"}`. */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { controlPlaneRedis, db } from "@/lib/http/deps";
import { handle, invalidRequest } from "@/lib/http/errors";
import { changeRollout, rolloutActionSchema } from "@/lib/services/rollout/control-rollout";

export async function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "policy.publish");
    const body = rolloutActionSchema.safeParse(await readJsonBody(request));
    if (!body.success) throw invalidRequest(body.error.issues, "body");
    const rollout = await changeRollout({ db: db(), redis: controlPlaneRedis() }, "promote", { actor: caller.actor, role: caller.role, reason: body.data.reason });
    return Response.json({ rollout });
  });
}
