/** GET /api/v1/quotas?period=YYYY-MM[&tenant] — per tenant and quota: limit, used, remaining, projection, run-out date. */
import { db } from "@/lib/db/client";
import { authenticate, handle, parseQuery } from "@/lib/services/usage-http";
import { getQuotas, quotasQuerySchema } from "@/lib/services/usage-query";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticate(request, "usage.read");
    const query = parseQuery(quotasQuerySchema, new URL(request.url));
    return Response.json(await getQuotas(db(), { ...query, nowMs: Date.now() }), { headers: { "cache-control": "no-store" } });
  });
}
