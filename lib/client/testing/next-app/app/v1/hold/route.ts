import { withSluice } from "sluice/client/next";
import { client, handled, testCost } from "../../../sluice";

export const dynamic = "force-dynamic";

export const GET = withSluice({ client, cost: testCost }, async (req: Request) => {
  handled(1);
  const ms = Number(new URL(req.url).searchParams.get("ms") ?? 0);
  // Streamed: the lease must be held until the last chunk is sent, not until the handler returns.
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode('{"held":'));
      await new Promise((r) => setTimeout(r, ms));
      controller.enqueue(new TextEncoder().encode("true}"));
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "application/json" } });
});
