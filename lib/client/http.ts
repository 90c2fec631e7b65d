/**
 * What every HTTP middleware does, without a framework: ask Sluice about one incoming request and
 * say how to answer it. The adapters (express.ts, fastify.ts, hono.ts, next.ts) only read the
 * request's parts and write the verdict in their framework's terms.
 *
 * - Denied (401, 403, 429, 503): the decision's status and headers (`Retry-After`, `RateLimit`, …)
 *   and an RFC 9457 problem body (`application/problem+json`, see problem.ts).
 * - Allowed: the `RateLimit` headers go on the response; a shaping limit's `delayMs` is waited
 *   before the handler runs; concurrency leases are released when the response ends.
 * - No API key: 401 `unknown_key` without asking (the decision API needs a key or a tenant).
 * - A request the decision API calls invalid (an over-long path or key) gets 400, not a 500.
 */
import { type SluiceClient, SluiceRequestError } from "./client.js";
import { type Clock, realClock } from "./clock.js";
import { problemFor, type Problem } from "./problem.js";
import type { DecisionAnswer, DecisionRequest } from "./types.js";

/** The decision API refuses longer fields; a key this long cannot exist, so it is unknown. */
const MAX_FIELD_CHARS = 512;

/** How a middleware reads the request, per framework request type `Req`. Every reader is optional. */
export interface SluiceMiddlewareOptions<Req> {
  client: SluiceClient;
  /** The end client's API key (default: `X-Api-Key`, else `Authorization: Bearer …`). */
  key?: (req: Req) => string | null | undefined;
  /** Or the tenant, when the service already knows it (then no key is needed). */
  tenant?: (req: Req) => string | null | undefined;
  /** The end client's address (default: the framework's own idea of it; see each adapter). */
  ip?: (req: Req) => string | null | undefined;
  /** The operation (default `METHOD /path`, without the query). */
  operation?: (req: Req) => string;
  /** Units this request costs (default: the operation's cost in the policy). */
  cost?: (req: Req) => number | undefined;
  /** Requests to let through without asking (health checks). */
  skip?: (req: Req) => boolean;
  /** For the shaping wait (tests pass a fake clock). */
  clock?: Clock;
}

/** The parts of a request the verdict depends on, read by an adapter. */
export interface HttpRequestParts {
  method: string;
  /** The path, with or without a query (the query is dropped). */
  path: string;
  key: string | null | undefined;
  tenant?: string | null;
  ip?: string | null;
  operation?: string;
  cost?: number;
}

export type HttpVerdict =
  | { pass: true; answer: DecisionAnswer | null; headers: Record<string, string>; hasLease: boolean; release: () => Promise<boolean> }
  | { pass: false; answer: DecisionAnswer | null; status: number; headers: Record<string, string>; problem: Problem; body: string };

const noRelease = () => Promise.resolve(false);

/**
 * `Authorization: Bearer <token>` as Sluice's servers read it (lib/auth/bearer.ts). The SDK ships
 * alone and imports nothing of Sluice, so it keeps this one line of the grammar;
 * lib/auth/bearer.test.ts holds the two equal.
 */
const BEARER = /^[ \t]*bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;

/** `X-Api-Key`, else the token of `Authorization: Bearer …`. */
export function apiKeyFrom(get: (name: string) => string | null | undefined): string | null {
  const key = get("x-api-key");
  if (key) return key;
  const m = BEARER.exec(get("authorization") ?? "");
  return m ? m[1]! : null;
}

/** A Node header value (string, list or absent) as one string. */
export function firstHeader(value: string | readonly string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : (value as string | undefined);
}

/**
 * `X-Real-IP`, else the last `X-Forwarded-For` entry (the one the proxy in front appended; those to
 * its left are the client's own words), as the decision server's forward-auth reads them by
 * default (docs/decision-api.md "Client addresses"): only behind a proxy that sets them.
 */
export function forwardedIp(get: (name: string) => string | null | undefined): string | null {
  const real = get("x-real-ip")?.trim();
  if (real) return real;
  const entries = get("x-forwarded-for")?.split(",");
  return entries?.[entries.length - 1]?.trim() || null;
}

function pathOnly(path: string): string {
  const q = path.indexOf("?");
  return q === -1 ? path : path.slice(0, q);
}

/** A plausible IP literal (the decision API canonicalises it); anything else is not sent. */
function plausibleIp(ip: string | null | undefined): string | undefined {
  return ip && ip.length <= 64 && /^[0-9a-fA-F:.]+$/.test(ip) && (ip.includes(".") || ip.includes(":")) ? ip : undefined;
}

function deny(answer: DecisionAnswer | null, status: number, problem: Problem, headers: Record<string, string> = {}): HttpVerdict {
  return {
    pass: false,
    answer,
    status,
    problem,
    body: JSON.stringify(problem),
    headers: { ...headers, "Content-Type": "application/problem+json", "Cache-Control": "no-store" },
  };
}

/** Asks about one request; never throws for a denial or an unreachable decision API. */
export async function decideHttp(client: SluiceClient, parts: HttpRequestParts, clock: Clock = realClock): Promise<HttpVerdict> {
  const request: DecisionRequest = { operation: parts.operation ?? `${parts.method.toUpperCase()} ${pathOnly(parts.path)}` };
  if (parts.tenant) request.tenant = parts.tenant;
  else if (parts.key && parts.key.length <= MAX_FIELD_CHARS) request.key = parts.key;
  else return deny(null, 401, problemFor({ status: 401, reason: "unknown_key", retryAfterSeconds: 0 }));
  const ip = plausibleIp(parts.ip);
  if (ip) request.ip = ip;
  if (parts.cost !== undefined) request.cost = parts.cost;

  let answer: DecisionAnswer;
  try {
    answer = await client.check(request);
  } catch (error) {
    if (!(error instanceof SluiceRequestError)) throw error;
    return deny(null, 400, { type: "about:blank", title: "Bad Request", status: 400, detail: error.message, reason: "invalid_request" });
  }
  if (!answer.allowed) return deny(answer, answer.status, problemFor(answer), answer.headers);
  if (answer.delayMs > 0) await clock.sleep(answer.delayMs);
  const leaseId = answer.leaseId;
  return {
    pass: true,
    answer,
    headers: answer.headers,
    hasLease: leaseId !== undefined,
    release: leaseId === undefined ? noRelease : once(() => client.release(leaseId)),
  };
}

function once<T>(fn: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | null = null;
  return () => (result ??= fn());
}

/** For adapters over the web `Request` (Hono, Next.js): its method, path and API key. */
export function webDefaults(req: Request): { method: string; path: string; key: () => string | null } {
  return { method: req.method, path: new URL(req.url).pathname, key: () => apiKeyFrom((name) => req.headers.get(name)) };
}

/** Applies the options' readers, falling back to the adapter's defaults. */
export function readParts<Req>(
  req: Req,
  options: SluiceMiddlewareOptions<Req>,
  defaults: { method: string; path: string; key: () => string | null; ip: (req: Req) => string | null | undefined },
): HttpRequestParts {
  return {
    method: defaults.method,
    path: defaults.path,
    key: options.key ? options.key(req) : defaults.key(),
    tenant: options.tenant?.(req),
    ip: (options.ip ?? defaults.ip)(req),
    operation: options.operation?.(req),
    cost: options.cost?.(req),
  };
}

/**
 * The handler's response with the decision's headers added, and its leases released once the body
 * has been sent (or the client went away). Headers a handler set itself win.
 */
export function finishWebResponse(res: Response, verdict: Extract<HttpVerdict, { pass: true }>): Response {
  const headers = new Headers(res.headers);
  for (const [name, value] of Object.entries(verdict.headers)) if (!headers.has(name)) headers.set(name, value);
  let body: ReadableStream<Uint8Array> | null = res.body;
  if (verdict.hasLease) {
    if (body === null) void verdict.release();
    else body = releaseAtEnd(body, verdict.release);
  }
  return new Response(body, { status: res.status, statusText: res.statusText, headers });
}

/** A stream that passes `source` through and calls `done` when it ends, fails or is cancelled. */
function releaseAtEnd(source: ReadableStream<Uint8Array>, done: () => Promise<unknown>): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const finish = () => void done().catch(() => false);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: ended, value } = await reader.read();
        if (ended) {
          controller.close();
          finish();
        } else controller.enqueue(value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    async cancel(reason) {
      finish();
      await reader.cancel(reason);
    },
  });
}

/** The verdict of a denial as a web Response. */
export function deniedResponse(verdict: Extract<HttpVerdict, { pass: false }>): Response {
  return new Response(verdict.body, { status: verdict.status, headers: verdict.headers });
}
