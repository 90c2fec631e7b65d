/** GET /api/v1/quotas?period=YYYY-MM[&tenant] — per tenant and quota: limit, used, remaining, projection, run-out date. */
import { db } from "@/lib/db/client";
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { handle } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";
import { getQuotas, quotasQuerySchema } from "@/lib/services/observe/usage-query";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "usage.read");
    const query = parseQuery(quotasQuerySchema, new URL(request.url));
    return Response.json(await getQuotas(db(), { ...query, nowMs: Date.now() }), { headers: { "cache-control": "no-store" } });
  });
}
