import { handled } from "../../../../../sluice";

export async function GET(_req: Request, ctx: { params: Promise<{ id: string }> }) {
  handled(1);
  return Response.json({ id: (await ctx.params).id });
}
