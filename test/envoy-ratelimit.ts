/**
 * A small model of Envoy's global rate limiting, for testing the gateway examples against a real
 * decision server (Envoy cannot be installed here: not in Debian, no container engine). Read from
 * Envoy's source, not copied:
 *
 * - Descriptors (source/common/router/router_ratelimit.cc): each `rate_limits` entry of the
 *   matched route (else of its virtual host) is one descriptor, its actions in order. An action
 *   that cannot produce its entry drops the whole descriptor — `request_headers` without the
 *   header, unless `skip_if_absent`, which drops only that entry; `header_value_match` whose
 *   headers match differently from `expect_match`. `remote_address` is the trusted client address,
 *   `masked_remote_address` that address masked to `v4_prefix_mask_len` / `v6_prefix_mask_len`
 *   (32 / 128 by default) as `addr/len`. `hits_addend.number` is the descriptor's hits_addend.
 *   Envoy calls the service only when at least one descriptor was produced.
 * - The call (source/extensions/filters/common/ratelimit/ratelimit_impl.cc): domain, descriptors,
 *   request `hits_addend` 0, the grpc_service's `initial_metadata`, a deadline of `timeout` (20 ms
 *   by default). OVER_LIMIT → over limit; any other answer → OK; any gRPC error → error.
 * - The answer (source/extensions/filters/http/ratelimit/ratelimit.cc and ratelimit_headers.cc):
 *   `response_headers_to_add` are kept; over limit adds `x-envoy-ratelimited: true` unless
 *   `disable_x_envoy_ratelimited_header`; `enable_x_ratelimit_headers: DRAFT_VERSION_03` adds
 *   X-RateLimit-Limit / -Remaining / -Reset from the status with the fewest `limit_remaining`
 *   among those with a `current_limit` (the limit, then `, <n>;w=<unit seconds>[;name="…"]` for
 *   each such status whose unit is known). Over limit: a local reply with `rate_limited_status`
 *   (429 by default, and when set below 400), body `raw_body`, those headers; to a gRPC client an
 *   HTTP 200 with grpc-status RESOURCE_EXHAUSTED when `rate_limited_as_resource_exhausted`, else
 *   the gRPC mapping of the HTTP status (429 → UNAVAILABLE). Error: `failure_mode_deny` answers
 *   `status_on_error` (500 by default), else the request goes on. OK: `request_headers_to_add`
 *   go to the upstream request, the response headers into the upstream's response.
 * - The connection manager removes `internal_only_headers` from external requests before any filter.
 */
import * as grpc from "@grpc/grpc-js";
import { parseIpAddress, formatIpAddress, maskIpAddress } from "../lib/policy/ip-address";
import { rlsClient, type RlsDescriptorMessage, type RlsResponseMessage } from "../lib/rls/protos";

/** A plain JSON/YAML object from a config file. */
export type Json = Record<string, unknown>;

export interface ClientRequest {
  method: string;
  path: string;
  /** Request headers, any case. */
  headers?: Record<string, string>;
  /** The trusted client address Envoy computed (use_remote_address). */
  remoteAddress: string;
  /** A gRPC client (content-type application/grpc): local replies are gRPC statuses. */
  grpc?: boolean;
}

/** What the end client sees, and what the upstream app received when the request went on. */
export interface ClientView {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** gRPC clients: the grpc-status of Envoy's local reply (0 when the app answered). */
  grpcStatus?: number;
  /** The headers the app received, when the request reached it. */
  upstream?: Record<string, string>;
  /** The descriptors sent (none: the service was not called). */
  descriptors: RlsDescriptorMessage[];
  /** How the call failed, when it did. */
  rlsError?: string;
}

const obj = (v: unknown, what: string): Json => {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`${what}: expected an object`);
  return v as Json;
};
const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** `0.1s` / `100ms` / `{ seconds, nanos }` → ms. */
export function durationMs(v: unknown, fallbackMs: number): number {
  if (v === undefined) return fallbackMs;
  if (typeof v === "string") {
    const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(v);
    if (!m) throw new Error(`unsupported duration ${v}`);
    return Number(m[1]) * (m[2] === "s" ? 1000 : 1);
  }
  const d = obj(v, "duration");
  return Number(d.seconds ?? 0) * 1000 + Number(d.nanos ?? 0) / 1e6;
}

function headerMatches(matcher: Json, headers: Record<string, string>): boolean {
  const name = str(matcher.name)!.toLowerCase();
  const value = headers[name];
  let matched: boolean;
  if (matcher.present_match !== undefined) matched = (value !== undefined) === Boolean(matcher.present_match);
  else if (value === undefined) matched = false;
  else if (matcher.exact_match !== undefined) matched = value === matcher.exact_match;
  else if (matcher.string_match !== undefined) {
    const sm = obj(matcher.string_match, "string_match");
    if (sm.exact !== undefined) matched = value === sm.exact;
    else if (sm.prefix !== undefined) matched = value.startsWith(String(sm.prefix));
    else if (sm.suffix !== undefined) matched = value.endsWith(String(sm.suffix));
    else if (sm.contains !== undefined) matched = value.includes(String(sm.contains));
    else throw new Error("unsupported string_match");
  } else matched = true; // no value matcher: presence
  return matcher.invert_match === true ? !matched : matched;
}

function maskedAddress(address: string, action: Json): string | null {
  const ip = parseIpAddress(address);
  if (!ip) return null;
  const bits = Number((ip.family === 4 ? action.v4_prefix_mask_len : action.v6_prefix_mask_len) ?? (ip.family === 4 ? 32 : 128));
  return `${formatIpAddress(maskIpAddress(ip, bits))}/${bits}`;
}

/** The descriptors Envoy builds from `rate_limits` for one request (headers keyed lower-case, pseudo-headers included). */
export function descriptorsFor(rateLimits: readonly Json[], headers: Record<string, string>, remoteAddress: string): RlsDescriptorMessage[] {
  const out: RlsDescriptorMessage[] = [];
  for (const rl of rateLimits) {
    if (rl.stage !== undefined && Number(rl.stage) !== 0) continue;
    const entries: { key: string; value: string }[] = [];
    let produced = true;
    for (const action of list(rl.actions)) {
      const [kind, raw] = Object.entries(action)[0] ?? [];
      const a = obj(raw ?? {}, String(kind));
      if (kind === "request_headers") {
        const value = headers[str(a.header_name)!.toLowerCase()];
        if (value === undefined) {
          if (a.skip_if_absent === true) continue;
          produced = false;
          break;
        }
        entries.push({ key: str(a.descriptor_key)!, value });
      } else if (kind === "remote_address") {
        entries.push({ key: "remote_address", value: remoteAddress });
      } else if (kind === "masked_remote_address") {
        const value = maskedAddress(remoteAddress, a);
        if (value === null) {
          produced = false;
          break;
        }
        entries.push({ key: "masked_remote_address", value });
      } else if (kind === "generic_key") {
        entries.push({ key: str(a.descriptor_key) || "generic_key", value: str(a.descriptor_value)! });
      } else if (kind === "header_value_match") {
        const expect = a.expect_match === undefined ? true : Boolean(a.expect_match);
        const all = list(a.headers).every((m) => headerMatches(m, headers));
        if (all !== expect) {
          produced = false;
          break;
        }
        entries.push({ key: str(a.descriptor_key) || "header_match", value: str(a.descriptor_value)! });
      } else {
        throw new Error(`rate limit action ${String(kind)} is not in the model`);
      }
    }
    if (!produced || entries.length === 0) continue;
    const d: RlsDescriptorMessage = { entries };
    if (rl.hits_addend !== undefined) {
      const h = obj(rl.hits_addend, "hits_addend");
      if (h.format !== undefined) throw new Error("hits_addend.format is not in the model");
      d.hits_addend = { value: Number(h.number) };
    }
    out.push(d);
  }
  return out;
}

function routeMatches(match: Json, path: string): boolean {
  const bare = path.split("?")[0]!;
  if (match.prefix !== undefined) return bare.startsWith(String(match.prefix));
  if (match.path !== undefined) return bare === match.path;
  throw new Error("only prefix and path route matches are in the model");
}

/** The matched route's rate_limits, else its virtual host's (Envoy's default OVERRIDE option). */
export function rateLimitsFor(routeConfig: Json, path: string): { rateLimits: Json[]; route: Json } | null {
  for (const vh of list(routeConfig.virtual_hosts)) {
    for (const route of list(vh.routes)) {
      if (!routeMatches(obj(route.match, "match"), path)) continue;
      const own = list(obj(route.route ?? {}, "route").rate_limits);
      return { rateLimits: own.length > 0 ? own : list(vh.rate_limits), route };
    }
  }
  return null;
}

const GRPC_OF_HTTP: Record<number, number> = { 400: 13, 401: 16, 403: 7, 404: 12, 429: 14, 502: 14, 503: 14, 504: 14 };

/** X-RateLimit-* (draft 03) as ratelimit_headers.cc builds them. */
export function xRateLimitHeaders(statuses: RlsResponseMessage["statuses"]): Record<string, string> {
  const windows: Record<string, number> = { SECOND: 1, MINUTE: 60, HOUR: 3_600, DAY: 86_400, MONTH: 2_592_000, YEAR: 31_536_000 };
  let min: RlsResponseMessage["statuses"][number] | undefined;
  let policy = "";
  for (const s of statuses) {
    if (!s.current_limit) continue;
    if (!min || (s.limit_remaining ?? 0) < (min.limit_remaining ?? 0)) min = s;
    const w = windows[s.current_limit.unit] ?? 0;
    if (w) policy += `, ${s.current_limit.requests_per_unit ?? 0};w=${w}${s.current_limit.name ? `;name="${s.current_limit.name}"` : ""}`;
  }
  if (!min) return {};
  return {
    "x-ratelimit-limit": `${min.current_limit!.requests_per_unit ?? 0}${policy}`,
    "x-ratelimit-remaining": String(min.limit_remaining ?? 0),
    "x-ratelimit-reset": String(Number(min.duration_until_reset?.seconds ?? 0)),
  };
}

export interface EnvoyModel {
  /** The ratelimit HTTP filter's typed_config. */
  filter: Json;
  /** The route configuration holding `rate_limits` (route or virtual host level). */
  routeConfig: Json;
  /** Where the rate limit service's cluster points (this test's decision server). */
  rlsAddress: string;
  /** The connection manager's internal_only_headers. */
  internalOnlyHeaders?: string[];
}

/**
 * Envoy keeps its HTTP/2 connection to the rate limit cluster open across requests (and warms it
 * through the cluster's health checks), so `timeout` measures the call, not a connection setup:
 * one client per address, connected (or found unreachable) before the timed call.
 */
const clients = new Map<string, ReturnType<typeof rlsClient>>();
async function connectedClient(address: string): Promise<ReturnType<typeof rlsClient>> {
  let client = clients.get(address);
  if (!client) {
    client = rlsClient(address);
    clients.set(address, client);
  }
  const c = client;
  await new Promise<void>((resolve) => c.waitForReady(Date.now() + 2_000, () => resolve()));
  return c;
}

/** Closes the model's connections (afterAll). */
export function closeEnvoyModel(): void {
  for (const c of clients.values()) c.close();
  clients.clear();
}

function add(headers: Record<string, string>, name: string, value: string): void {
  const k = name.toLowerCase();
  headers[k] = headers[k] === undefined ? value : `${headers[k]}, ${value}`;
}

/** Runs one client request through the model: Envoy's filter, the real service, the app. */
export async function throughEnvoy(model: EnvoyModel, request: ClientRequest): Promise<ClientView> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(request.headers ?? {})) headers[k.toLowerCase()] = v;
  for (const h of model.internalOnlyHeaders ?? []) delete headers[h.toLowerCase()];
  Object.assign(headers, { ":method": request.method, ":path": request.path, ":authority": headers.host ?? "api.example.com" });
  if (request.grpc) headers["content-type"] = "application/grpc";

  const upstreamReply = (extraRequest: Record<string, string>, extraResponse: Record<string, string>): ClientView => {
    const upstream = { ...headers };
    for (const [k, v] of Object.entries(extraRequest)) add(upstream, k, v);
    const out: Record<string, string> = { ...extraResponse };
    return request.grpc ? { status: 200, headers: out, body: "", grpcStatus: 0, upstream, descriptors } : { status: 200, headers: out, body: "ok", upstream, descriptors };
  };

  const matched = rateLimitsFor(model.routeConfig, request.path);
  const descriptors = matched ? descriptorsFor(matched.rateLimits, headers, request.remoteAddress) : [];
  if (descriptors.length === 0) return upstreamReply({}, {});

  const f = model.filter;
  const service = obj(obj(f.rate_limit_service, "rate_limit_service").grpc_service, "grpc_service");
  const metadata = new grpc.Metadata();
  for (const m of list(service.initial_metadata)) metadata.add(str(m.key)!, str(m.value)!);
  const timeoutMs = durationMs(f.timeout, 20);
  const client = await connectedClient(model.rlsAddress);
  const outcome = await new Promise<{ response?: RlsResponseMessage; error?: grpc.ServiceError }>((resolve) =>
    client.ShouldRateLimit({ domain: str(f.domain)!, descriptors, hits_addend: 0 }, metadata, { deadline: Date.now() + timeoutMs }, (error, response) =>
      resolve(error ? { error } : { response }),
    ),
  );

  if (outcome.error) {
    if (f.failure_mode_deny === true) {
      const status = Number(obj(f.status_on_error ?? { code: 500 }, "status_on_error").code);
      return request.grpc
        ? { status: 200, headers: {}, body: "", grpcStatus: GRPC_OF_HTTP[status] ?? 2, descriptors, rlsError: outcome.error.message }
        : { status, headers: {}, body: "", descriptors, rlsError: outcome.error.message };
    }
    return { ...upstreamReply({}, {}), rlsError: outcome.error.message };
  }
  const response = outcome.response!;
  const responseHeaders: Record<string, string> = {};
  for (const h of response.response_headers_to_add ?? []) add(responseHeaders, h.key, h.value);
  const overLimit = response.overall_code === "OVER_LIMIT";
  if (overLimit && f.disable_x_envoy_ratelimited_header !== true) add(responseHeaders, "x-envoy-ratelimited", "true");
  if (f.enable_x_ratelimit_headers === "DRAFT_VERSION_03") {
    for (const [k, v] of Object.entries(xRateLimitHeaders(response.statuses ?? []))) add(responseHeaders, k, v);
  }
  if (!overLimit) {
    const requestHeaders: Record<string, string> = {};
    for (const h of response.request_headers_to_add ?? []) add(requestHeaders, h.key, h.value);
    return upstreamReply(requestHeaders, responseHeaders);
  }
  const configured = f.rate_limited_status === undefined ? 429 : Number(obj(f.rate_limited_status, "rate_limited_status").code);
  const status = configured < 400 ? 429 : configured;
  if (request.grpc) {
    const grpcStatus = f.rate_limited_as_resource_exhausted === true ? grpc.status.RESOURCE_EXHAUSTED : (GRPC_OF_HTTP[status] ?? grpc.status.UNKNOWN);
    return { status: 200, headers: { ...responseHeaders, "content-type": "application/grpc" }, body: "", grpcStatus, descriptors };
  }
  const rawBody = (response as { raw_body?: Buffer }).raw_body;
  return { status, headers: responseHeaders, body: rawBody ? rawBody.toString("utf8") : "", descriptors };
}
