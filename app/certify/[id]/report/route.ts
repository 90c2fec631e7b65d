/**
 * GET /certify/<id>/report — the readable page `sluice certify` stored with the report
 * (`?format=json`: the report itself). Static HTML without scripts, served with a CSP to match.
 */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { db } from "@/lib/http/deps";
import { handle } from "@/lib/http/errors";
import { readCertification } from "@/lib/services/justify/certification-view";

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "policy.read");
    const c = await readCertification(db(), (await params).id);
    if (new URL(request.url).searchParams.get("format") === "json") return Response.json(c.raw, { headers: { "Cache-Control": "no-store" } });
    return new Response(c.html, {
      headers: {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
        "Cache-Control": "no-store",
      },
    });
  });
}
