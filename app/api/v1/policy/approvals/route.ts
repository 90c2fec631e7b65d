/** GET /api/v1/policy/approvals[?state=pending|approved|rejected|superseded] — requests for a second person's approval, newest first. */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { db } from "@/lib/http/deps";
import { handle } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";
import { approvalListQuerySchema, listApprovals } from "@/lib/services/approval/decide-approval";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "policy.read");
    const query = parseQuery(approvalListQuerySchema, new URL(request.url));
    return Response.json({ approvals: await listApprovals({ db: db() }, query) }, { headers: { "cache-control": "no-store" } });
  });
}
