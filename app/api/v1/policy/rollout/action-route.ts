/** The POST handler of /api/v1/policy/rollout/{abort,pause,promote}: one change to the running rollout. Optional body `{"reason": "…"}`. */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { controlPlaneRedis, db } from "@/lib/http/deps";
import { handle, invalidRequest } from "@/lib/http/errors";
import { changeRollout, rolloutActionSchema, type RolloutAction } from "@/lib/services/rollout/control-rollout";

export function rolloutActionRoute(action: RolloutAction): (request: Request) => Promise<Response> {
  return (request) =>
    handle(async () => {
      const caller = await authenticateAdmin(request, db(), "policy.publish");
      const body = rolloutActionSchema.safeParse(await readJsonBody(request));
      if (!body.success) throw invalidRequest(body.error.issues, "body");
      // Only promote reads the role: whether an admin may skip the approval rule (adminBypass).
      const rollout = await changeRollout({ db: db(), redis: controlPlaneRedis() }, action, { actor: caller.actor, role: caller.role, reason: body.data.reason });
      return Response.json({ rollout });
    });
}
