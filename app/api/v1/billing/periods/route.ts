/** GET /api/v1/billing/periods — billing months with status (open|closed), revision and recorded checksums. */
import { db } from "@/lib/db/client";
import { listBilling } from "@/lib/services/billing-export";
import { authenticate, handle } from "@/lib/services/usage-http";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticate(request, "billing.export");
    return Response.json({ periods: await listBilling(db()) }, { headers: { "cache-control": "no-store" } });
  });
}
