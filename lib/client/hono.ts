/**
 * `sluice/client/hono`: Hono middleware, on any runtime Hono runs on. `app.use(sluiceHono({ client }))`.
 *
 * Defaults: the key from `X-Api-Key` or `Authorization: Bearer`; the operation `METHOD <path>`;
 * the address from the socket under @hono/node-server, else none — on other runtimes pass `ip`
 * (e.g. `(c) => c.req.header("cf-connecting-ip")` on Cloudflare). Leases are released when the
 * response body has been sent.
 */
import type { Context, MiddlewareHandler } from "hono";
import { decideHttp, deniedResponse, finishWebResponse, readParts, type SluiceMiddlewareOptions, webDefaults } from "./http.js";

export type SluiceHonoOptions = SluiceMiddlewareOptions<Context>;

/** @hono/node-server puts Node's request in `c.env.incoming`. */
function nodeSocketIp(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

export function sluiceHono(options: SluiceHonoOptions): MiddlewareHandler {
  return async (c, next) => {
    if (options.skip?.(c)) return next();
    const parts = readParts(c, options, { ...webDefaults(c.req.raw), ip: nodeSocketIp });
    const verdict = await decideHttp(options.client, parts, options.clock);
    if (!verdict.pass) return deniedResponse(verdict);
    await next();
    c.res = finishWebResponse(c.res, verdict);
  };
}
