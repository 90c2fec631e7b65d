/**
 * `sluice/client/express`: Express (4 and 5) middleware. `app.use(sluiceExpress({ client }))`.
 *
 * Defaults: the key from `X-Api-Key` or `Authorization: Bearer`; the address from `req.ip`, which
 * honours Express's `trust proxy` setting; the operation `METHOD <path>` from `req.originalUrl`
 * (the full path also under a mounted router, without the query). Leases are released on the
 * response's `close` (sent, or the client went away).
 */
import { decideHttp, firstHeader, readParts, type SluiceMiddlewareOptions, apiKeyFrom } from "./http.js";

/** The parts of Express's request this middleware reads (structural: no @types/express needed). */
export interface ExpressLikeRequest {
  method: string;
  originalUrl?: string;
  url: string;
  ip?: string;
  headers: Record<string, string | string[] | undefined>;
  socket?: { remoteAddress?: string };
}

export interface ExpressLikeResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body?: string): unknown;
  once(event: "close", listener: () => void): unknown;
}

export type ExpressMiddleware = (req: ExpressLikeRequest, res: ExpressLikeResponse, next: (error?: unknown) => void) => void;

export function sluiceExpress(options: SluiceMiddlewareOptions<ExpressLikeRequest>): ExpressMiddleware {
  return (req, res, next) => {
    if (options.skip?.(req)) return next();
    const get = (name: string) => firstHeader(req.headers[name]);
    const parts = readParts(req, options, {
      method: req.method,
      path: req.originalUrl ?? req.url,
      key: () => apiKeyFrom(get),
      ip: (r) => r.ip ?? r.socket?.remoteAddress,
    });
    decideHttp(options.client, parts, options.clock).then((verdict) => {
      for (const [name, value] of Object.entries(verdict.headers)) res.setHeader(name, value);
      if (!verdict.pass) {
        res.statusCode = verdict.status;
        res.end(verdict.body);
        return;
      }
      if (verdict.hasLease) res.once("close", () => void verdict.release());
      next();
    }, next);
  };
}
