/** GET /api/v1/billing/periods — billing months with status (open|closed), revision and recorded checksums. */
import { db } from "@/lib/db/client";
import { listBilling } from "@/lib/services/billing/billing-export";
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { handle } from "@/lib/http/errors";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "billing.export");
    return Response.json({ periods: await listBilling(db()) }, { headers: { "cache-control": "no-store" } });
  });
}
