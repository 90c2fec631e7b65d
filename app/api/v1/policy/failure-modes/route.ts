/**
 * POST /api/v1/policy/failure-modes `{"default"?: "open"|"closed"|"local", "operations"?: [{"name",
 * "failureMode": mode|null}], "note"?}` — apply failure modes to the live policy at once, as a new
 * version that changes only them (the draft's other pending changes are not shipped). sre, admin.
 */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readJsonBody } from "@/lib/http/body";
import { controlPlaneRedis, db } from "@/lib/http/deps";
import { handle } from "@/lib/http/errors";
import { applyFailureModes } from "@/lib/services/policy/apply-failure-modes";

export async function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "failure_mode.set");
    return Response.json(await applyFailureModes({ db: db(), redis: controlPlaneRedis() }, await readJsonBody(request), caller));
  });
}
