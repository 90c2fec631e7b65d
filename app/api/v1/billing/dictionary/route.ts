/**
 * GET /api/v1/billing/dictionary[?format=csv|json] — what every column of the billing export means,
 * with its unit. The CSV export links here (`Link: …; rel="describedby"`); the JSON export carries
 * the same dictionary inline.
 */
import { db } from "@/lib/db/client";
import { BILLING_DICTIONARY, billingDictionaryQuerySchema, renderDictionaryCsv } from "@/lib/services/billing/billing-format";
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { handle } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "billing.export");
    const { format } = parseQuery(billingDictionaryQuerySchema, new URL(request.url));
    if (format === "json") return Response.json({ columns: BILLING_DICTIONARY }, { headers: { "cache-control": "no-store" } });
    return new Response(renderDictionaryCsv(), {
      headers: {
        "content-type": "text/csv; charset=utf-8; header=present",
        "content-disposition": `attachment; filename="sluice-billing-dictionary.csv"`,
        "cache-control": "no-store",
      },
    });
  });
}
