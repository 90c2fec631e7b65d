/** GET /nfr/export?version=N&format=markdown|csv|json — what `sluice nfr` prints, as a download. */
import { authenticateAdmin } from "@/lib/http/admin-auth";
import { db } from "@/lib/http/deps";
import { handle } from "@/lib/http/errors";
import { nfrDownload } from "@/lib/services/justify/nfr-page";

export async function GET(request: Request): Promise<Response> {
  return handle(async () => {
    await authenticateAdmin(request, db(), "policy.read");
    const params = new URL(request.url).searchParams;
    const file = await nfrDownload(db(), { version: params.get("version") ?? undefined, format: params.get("format") ?? undefined });
    return new Response(file.body, {
      headers: { "Content-Type": file.contentType, "Content-Disposition": `attachment; filename="${file.filename}"`, "Cache-Control": "no-store" },
    });
  });
}
