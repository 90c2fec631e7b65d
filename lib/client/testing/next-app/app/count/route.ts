import { handled } from "../../sluice";

export const dynamic = "force-dynamic";

export function GET() {
  return Response.json({ handled: handled() });
}
