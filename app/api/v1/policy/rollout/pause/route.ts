/** POST /api/v1/policy/rollout/pause — stop advancing the running rollout; the cohort keeps the new version. Optional body `{"reason": "…"}`. */
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
    const rollout = await changeRollout({ db: db(), redis: controlPlaneRedis() }, "pause", { actor: caller.actor, reason: body.data.reason });
    return Response.json({ rollout });
  });
}
