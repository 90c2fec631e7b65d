/** GET /api/v1/openapi.json — the admin REST API's OpenAPI 3.1 document (lib/openapi/admin.ts). Public: it is a contract, not data. */
import { adminOpenApi } from "@/lib/openapi/admin";

export function GET(): Response {
  return Response.json(adminOpenApi(), { headers: { "cache-control": "public, max-age=300" } });
}
