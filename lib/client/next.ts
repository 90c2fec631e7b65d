/**
 * `sluice/client/next`: Next.js (App Router) — a route-handler wrapper and a `proxy.ts` helper.
 *
 * - `withSluice(options, handler)` wraps a route handler (`export const GET = withSluice(...)`):
 *   denied requests get the decision's status, headers and a problem body; allowed ones run the
 *   handler, get the `RateLimit` headers, and release their concurrency leases when the response
 *   body has been sent (streaming responses included).
 * - `sluiceProxy(options)` returns a function for `proxy.ts` (Next 16's middleware): it answers
 *   denials before any route runs and puts the `RateLimit` headers on allowed responses. A proxy
 *   never sees a response end, so it cannot hold a concurrency lease: it releases any lease before
 *   it answers.
 *   Use `withSluice` on the routes a concurrency limit covers.
 *
 * Default address: `X-Real-IP`, else the last `X-Forwarded-For` entry — Next.js exposes no socket,
 * so these must come from a proxy you trust (Vercel and most platforms set them); pass `ip` otherwise.
 */
import { NextResponse } from "next/server.js";
import { decideHttp, deniedResponse, finishWebResponse, forwardedIp, readParts, type SluiceMiddlewareOptions, webDefaults } from "./http.js";

export type SluiceNextOptions = SluiceMiddlewareOptions<Request>;

const defaultIp = (req: Request) => forwardedIp((name) => req.headers.get(name));

async function verdictFor(req: Request, options: SluiceNextOptions) {
  return decideHttp(options.client, readParts(req, options, { ...webDefaults(req), ip: defaultIp }), options.clock);
}

export function withSluice<Req extends Request, Ctx>(
  options: SluiceMiddlewareOptions<Req>,
  handler: (req: Req, ctx: Ctx) => Response | Promise<Response>,
): (req: Req, ctx: Ctx) => Promise<Response> {
  return async (req, ctx) => {
    if (options.skip?.(req)) return handler(req, ctx);
    const verdict = await verdictFor(req, options as SluiceNextOptions);
    if (!verdict.pass) return deniedResponse(verdict);
    let res: Response;
    try {
      res = await handler(req, ctx);
    } catch (error) {
      void verdict.release();
      throw error;
    }
    return finishWebResponse(res, verdict);
  };
}

/**
 * `export async function proxy(request) { return sluice(request); }` — or pass the response your
 * proxy already built as `next` (e.g. `NextResponse.next({ request: { headers } })`) to get the
 * RateLimit headers added to it.
 */
export function sluiceProxy<Req extends Request>(options: SluiceMiddlewareOptions<Req>): (req: Req, next?: Response) => Promise<Response> {
  return async (req, next) => {
    const response = next ?? NextResponse.next();
    if (options.skip?.(req)) return response;
    const verdict = await verdictFor(req, options as SluiceNextOptions);
    if (!verdict.pass) return deniedResponse(verdict);
    // Released before answering: the client's next request must find the lease free.
    if (verdict.hasLease) await verdict.release();
    for (const [name, value] of Object.entries(verdict.headers)) if (!response.headers.has(name)) response.headers.set(name, value);
    return response;
  };
}
