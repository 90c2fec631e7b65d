/** GET /api/v1/usage/top?from&to&by=requests|denied&limit=N — top tenants and API key prefixes. */
import { db } from "@/lib/db/client";
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { handle } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";
import { getTop, topQuerySchema } from "@/lib/services/observe/usage-query";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "usage.read");
    const query = parseQuery(topQuerySchema, new URL(request.url));
    return Response.json(await getTop(db(), query), { headers: { "cache-control": "no-store" } });
  });
}
