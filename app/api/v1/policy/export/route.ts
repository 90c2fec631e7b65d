/** GET /api/v1/policy/export — the draft policy as a file (YAML; `?format=json` for JSON). No secrets. */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { db } from "@/lib/http/deps";
import { handle } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";
import { exportPolicyFile, exportPolicyObject, exportQuerySchema } from "@/lib/services/export-policy-file";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "policy.read");
    if (parseQuery(exportQuerySchema, new URL(request.url)).format === "json") return Response.json(await exportPolicyObject(db()));
    return new Response(await exportPolicyFile(db()), {
      headers: { "Content-Type": "application/yaml; charset=utf-8", "Cache-Control": "no-store" },
    });
  });
}
