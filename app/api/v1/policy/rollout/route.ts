/**
 * GET /api/v1/policy/rollout — the running rollout, else the last one (`{"rollout": null}`: none yet).
 * POST /api/v1/policy/rollout — start a guarded rollout of the draft; the body is the rollout file
 * as JSON (`{"canaries": ["acme"], "steps": ["10%:1h", "100%"]}`; docs/control-plane.md#guarded-rollout).
 * Under the policy's approval rule, a first step beyond its blast radius answers 202 with
 * `{"rollout": null, "approval": {…}}`: nothing rolls out until another user approves it.
 */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { controlPlaneRedis, db } from "@/lib/http/deps";
import { handle } from "@/lib/http/errors";
import { rolloutStatus } from "@/lib/services/rollout/control-rollout";
import { startRollout } from "@/lib/services/rollout/start-rollout";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "policy.read");
    return Response.json({ rollout: await rolloutStatus({ db: db() }) });
  });
}

export async function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "policy.publish");
    const result = await startRollout({ db: db(), redis: controlPlaneRedis() }, await readJsonBody(request), { actor: caller.actor, role: caller.role });
    if (result.status === "approval_pending") return Response.json({ rollout: null, approval: result.approval }, { status: 202 });
    return Response.json({ rollout: result.rollout });
  });
}
