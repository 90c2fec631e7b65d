/**
 * `sluice/client/fastify`: a Fastify (4 and 5) plugin. `await app.register(sluiceFastify({ client }))`
 * checks every request of the instance it is registered on (it is not encapsulated, like a plugin
 * wrapped in fastify-plugin), in an `onRequest` hook, before body parsing.
 *
 * Defaults: the key from `X-Api-Key` or `Authorization: Bearer`; the address from `request.ip`
 * (Fastify's `trustProxy` decides what that is); the operation `METHOD <path>` without the query.
 * Leases are released when the raw response closes.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { apiKeyFrom, decideHttp, firstHeader, readParts, type SluiceMiddlewareOptions } from "./http.js";

export type SluiceFastifyOptions = SluiceMiddlewareOptions<FastifyRequest>;

/** The onRequest hook itself, for `app.addHook("onRequest", sluiceOnRequest({ client }))` on a chosen scope. */
export function sluiceOnRequest(options: SluiceFastifyOptions) {
  return async function sluiceHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (options.skip?.(request)) return;
    const get = (name: string) => firstHeader(request.headers[name]);
    const parts = readParts(request, options, {
      method: request.method,
      path: request.url,
      key: () => apiKeyFrom(get),
      ip: (r) => r.ip,
    });
    const verdict = await decideHttp(options.client, parts, options.clock);
    reply.headers(verdict.headers);
    if (!verdict.pass) {
      await reply.code(verdict.status).send(verdict.body);
      return;
    }
    if (verdict.hasLease) reply.raw.once("close", () => void verdict.release());
  };
}

export function sluiceFastify(options: SluiceFastifyOptions): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (fastify) => {
    fastify.addHook("onRequest", sluiceOnRequest(options));
  };
  // What fastify-plugin sets: the hook applies to the instance registering it, not a child scope.
  Object.assign(plugin, { [Symbol.for("skip-override")]: true, [Symbol.for("fastify.display-name")]: "sluice" });
  return plugin;
}
