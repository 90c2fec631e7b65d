/**
 * POST /api/v1/policy/discard — reset the draft to the live version (discards every unpublished
 * change; API keys stay). Answers `{"version": N, "changes": n}`.
 */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { db } from "@/lib/http/deps";
import { handle } from "@/lib/http/errors";
import { discardDraft } from "@/lib/services/policy/discard-draft";

export async function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const caller = await authenticateAdmin(request, db(), "policy.edit");
    return Response.json(await discardDraft(db(), caller));
  });
}
