/**
 * GET /api/v1/policy/export — the draft (default) or, with `?version=live`, the live version as a
 * policy file (YAML; `?format=json` for JSON). No secrets. The Policy page's "Policy as YAML" links here.
 */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { db } from "@/lib/http/deps";
import { handle } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";
import { exportLivePolicyFile, exportLivePolicyObject, exportPolicyFile, exportPolicyObject, exportQuerySchema } from "@/lib/services/policy/export-policy-file";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "policy.read");
    const q = parseQuery(exportQuerySchema, new URL(request.url));
    const live = q.version === "live";
    if (q.format === "json") return Response.json(live ? (await exportLivePolicyObject(db())).file : await exportPolicyObject(db()));
    const yaml = live ? (await exportLivePolicyFile(db())).yaml : await exportPolicyFile(db());
    const filename = live ? "sluice-policy-live.yaml" : "sluice-policy-draft.yaml";
    return new Response(yaml, {
      headers: { "Content-Type": "application/yaml; charset=utf-8", "Cache-Control": "no-store", "Content-Disposition": `inline; filename="${filename}"` },
    });
  });
}
