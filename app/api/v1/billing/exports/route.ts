/**
 * GET /api/v1/billing/exports?period=YYYY-MM&format=csv|json|cloudevents — the month's billing
 * export (admin token or a billing/admin session; product and sre get 403). The body is the same
 * bytes for the same period until an adjustment; `X-Sluice-Checksum` is its sha256. The time of the
 * export is a header (`X-Sluice-Exported-At`), never in the bytes; the column dictionary is inline
 * in JSON and linked (`Link: </api/v1/billing/dictionary>; rel="describedby"`) from every format.
 */
import { db } from "@/lib/db/client";
import { billingExportQuerySchema, exportBilling } from "@/lib/services/billing/billing-export";
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { handle } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";

export const dynamic = "force-dynamic";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "billing.export");
    const query = parseQuery(billingExportQuerySchema.strict(), new URL(request.url));
    const result = await exportBilling(db(), query);
    return new Response(result.body, {
      headers: {
        "content-type": result.contentType,
        "content-disposition": `attachment; filename="${result.filename}"`,
        "cache-control": "no-store",
        "x-sluice-checksum": `sha256:${result.checksum}`,
        "x-sluice-billing-status": result.status,
        "x-sluice-billing-revision": String(result.revision),
        "x-sluice-exported-at": new Date().toISOString(),
        link: `</api/v1/billing/dictionary?format=${result.format === "csv" ? "csv" : "json"}>; rel="describedby"`,
      },
    });
  });
}
