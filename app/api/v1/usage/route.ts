/** GET /api/v1/usage?from&to&granularity=minute|hour|day[&tenant][&tier] — decisions by outcome over time. */
import { db } from "@/lib/db/client";
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { handle } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";
import { getUsage, usageQuerySchema } from "@/lib/services/observe/usage-query";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "usage.read");
    const query = parseQuery(usageQuerySchema, new URL(request.url));
    return Response.json(await getUsage(db(), query), { headers: { "cache-control": "no-store" } });
  });
}
