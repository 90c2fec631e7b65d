/**
 * POST /api/v1/policy/apply — apply a policy file (YAML or JSON, by Content-Type); `?dryRun=1`
 * answers the plan without writing. Bearer admin token; 400 names the failing path.
 */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { readBodyText } from "@/lib/http/body";
import { db } from "@/lib/http/deps";
import { handle, ServiceError } from "@/lib/http/errors";
import { parseQuery } from "@/lib/http/query";
import { applyPolicyFile, applyQuerySchema, type PolicyInput } from "@/lib/services/policy/apply-policy-file";

const YAML_TYPES = ["application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "text/plain", ""];

export async function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const query = parseQuery(applyQuerySchema, new URL(request.url));
    const dryRun = query.dryRun === "1" || query.dryRun === "true";
    // A dry run only reads; an apply needs policy.edit, and every field it changes is checked
    // against the caller's role (a product token cannot set failure modes through a file).
    const caller = await authenticateAdmin(request, db(), dryRun ? "policy.read" : "policy.edit");
    const type = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
    const text = await readBodyText(request);
    let input: PolicyInput;
    if (type === "application/json") {
      try {
        input = JSON.parse(text) as PolicyInput;
      } catch {
        throw new ServiceError("invalid_request", "the body is not valid JSON");
      }
    } else if (YAML_TYPES.includes(type)) {
      input = text;
    } else {
      throw new ServiceError("unsupported_media_type", "send application/json or application/yaml");
    }
    const result = await applyPolicyFile(db(), input, { actor: caller.actor, role: caller.role, dryRun });
    return Response.json(result);
  });
}
