import { withSluice } from "sluice/client/next";
import { client, handled, testCost } from "../../../../sluice";

export const GET = withSluice({ client, cost: testCost }, async (_req: Request, ctx: { params: Promise<{ id: string }> }) => {
  handled(1);
  return Response.json({ id: (await ctx.params).id });
});
