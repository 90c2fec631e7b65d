/**
 * Operation matching: `METHOD /path` patterns → operations. `*` matches exactly one path segment,
 * `**` matches the rest of the path (zero or more segments; only meaningful last), method `*`
 * matches any method.
 *
 * A request path is normalised before it is matched (normalizePath), so that the spellings a
 * backend treats as one resource cannot escape that resource's operation and fall through to `*`
 * (issue #17: `/API/widgets`, `/%77idgets`, `/./widgets`, `/widgets;x=1`, `HEAD` all did):
 * the query and fragment are dropped; the path is split on `/` and empty segments are dropped
 * (`//`, a trailing slash); each segment loses its matrix parameters (from the first `;`, as
 * Tomcat and Spring do), is percent-decoded once (`%77` → `w`; `%2577` → `%77`, not `w`; an
 * encoded `%2F` stays inside its segment; an invalid escape is kept as written) and lower-cased;
 * then `.` segments are dropped and `..` removes the segment before it (never above the root),
 * after decoding, as WHATWG URLs and nginx resolve `%2e%2e`. Matching is case-insensitive on
 * purpose: Express and ASP.NET route case-insensitively by default, so `/API/widgets` reaches the
 * widgets handler there; two operations whose patterns differ only in case are one operation here.
 * Methods are upper-cased; `HEAD` is matched like `GET` (a HEAD request is a GET without the
 * body), and a pattern that names `HEAD` itself beats the `GET` pattern of the same path.
 *
 * When several patterns match, the most specific wins: paths compare segment by segment (a literal
 * beats `*`, `*` beats the end of a shorter pattern, which beats `**`), then a named method beats
 * `*`, then the earlier operation in the file wins. This is on the decision hot path, so each
 * document gets a precomputed index (an exact map for wildcard-free routes, ordered pattern lists
 * per method), cached in a WeakMap keyed by the document object; a path that needs no
 * normalisation (the common case) skips it.
 */
import type { CompiledOperation, CompiledPolicyBody, CompiledRoute } from "./compiled";

const SEGMENT = 0;
const ONE = 1;
const END = 2;
const REST = 3;

function rankAt(segments: readonly string[], i: number): number {
  if (i >= segments.length) return END;
  const s = segments[i];
  return s === "**" ? REST : s === "*" ? ONE : SEGMENT;
}

/** Splits a path into segments: no query, no fragment, no empty segments (patterns; no decoding). */
export function pathSegments(path: string): string[] {
  let end = path.length;
  const q = path.indexOf("?");
  if (q !== -1) end = q;
  const h = path.indexOf("#");
  if (h !== -1 && h < end) end = h;
  const out: string[] = [];
  for (const part of path.slice(0, end).split("/")) if (part !== "") out.push(part);
  return out;
}

/**
 * Runs of `%XX` are decoded as UTF-8; in a run that is not valid UTF-8, the ASCII escapes are
 * decoded one by one and the others kept as written.
 */
function decodeOnce(segment: string): string {
  if (!segment.includes("%")) return segment;
  return segment.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run.replace(/%[0-7][0-9a-fA-F]/g, (e) => String.fromCharCode(parseInt(e.slice(1), 16)));
    }
  });
}

/**
 * A request path as the segments it is matched by (see the top of this file): no query or
 * fragment, no empty segments, no matrix parameters, decoded once, lower-case, dot segments
 * resolved. `/V1/./Orders;jsessionid=x/%34%32/../42?x` → ["v1", "orders", "42"].
 */
export function normalizePath(path: string): string[] {
  const out: string[] = [];
  for (const raw of pathSegments(path)) {
    const semi = raw.indexOf(";");
    const segment = decodeOnce(semi === -1 ? raw : raw.slice(0, semi)).toLowerCase();
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  return out;
}

/**
 * True when a path (query already cut) is its own normalised form apart from a trailing slash:
 * no upper case, escapes, matrix parameters, empty or dot segments. The hot path's shortcut.
 */
function isPlainPath(path: string): boolean {
  return path.startsWith("/") && !/[A-Z%;]|\/\/|\/\.\.?(?:\/|$)/.test(path);
}

/** `GET /v1/orders/*` → { method: "GET", segments: ["v1", "orders", "*"] }. */
export function parseRoute(pattern: string, operation: string): CompiledRoute {
  const space = pattern.indexOf(" ");
  const method = (space === -1 ? "*" : pattern.slice(0, space)).toUpperCase();
  const path = space === -1 ? pattern : pattern.slice(space + 1);
  const segments = pathSegments(path.trim());
  // Anything after `**` can never constrain a match; drop it so ordering stays honest.
  const rest = segments.indexOf("**");
  return { method, segments: rest === -1 ? segments : segments.slice(0, rest + 1), operation };
}

/** Negative when `a` is more specific than `b`. */
export function compareRoutes(a: CompiledRoute, b: CompiledRoute): number {
  const n = Math.max(a.segments.length, b.segments.length);
  for (let i = 0; i < n; i++) {
    const ra = rankAt(a.segments, i);
    const rb = rankAt(b.segments, i);
    if (ra !== rb) return ra - rb;
    if (ra === REST || ra === END) break;
  }
  const ma = a.method === "*" ? 1 : 0;
  const mb = b.method === "*" ? 1 : 0;
  return ma - mb;
}

/** Every operation's patterns, most specific first (stable: ties keep file order). */
export function compileRoutes(operations: readonly { name: string; match: readonly string[] }[]): CompiledRoute[] {
  const routes: CompiledRoute[] = [];
  for (const op of operations) for (const pattern of op.match) routes.push(parseRoute(pattern, op.name));
  return routes
    .map((route, index) => ({ route, index }))
    .sort((x, y) => compareRoutes(x.route, y.route) || x.index - y.index)
    .map((x) => x.route);
}

/** Whether `route` matches a request path already split into segments. */
export function routeMatches(route: CompiledRoute, segments: readonly string[]): boolean {
  const pattern = route.segments;
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i];
    if (p === "**") return true;
    if (i >= segments.length) return false;
    if (p !== "*" && p !== segments[i]) return false;
  }
  return pattern.length === segments.length;
}

interface RouteIndex {
  /** `METHOD /a/b` (method may be `*`) → operation name, for routes without wildcards. */
  exact: Map<string, string>;
  /** Wildcard routes per request method (including method-`*` routes), most specific first. */
  byMethod: Map<string, CompiledRoute[]>;
  /** Wildcard routes with method `*`, for methods no route names. */
  anyMethod: CompiledRoute[];
}

const indexes = new WeakMap<object, RouteIndex>();

/** At equal specificity a HEAD pattern beats a GET pattern for a HEAD request. */
function headFirst(a: CompiledRoute, b: CompiledRoute): number {
  return (a.method === "HEAD" ? 0 : 1) - (b.method === "HEAD" ? 0 : 1);
}

function buildIndex(compiled: readonly CompiledRoute[]): RouteIndex {
  // Literal segments are matched lower-case, like normalised request paths.
  const routes = compiled.map((r) => ({ ...r, segments: r.segments.map((s) => s.toLowerCase()) }));
  const exact = new Map<string, string>();
  const wild: CompiledRoute[] = [];
  for (const route of routes) {
    if (route.segments.some((s) => s === "*" || s === "**")) {
      wild.push(route);
    } else {
      const key = `${route.method} /${route.segments.join("/")}`;
      // Routes arrive most specific first; the first claim on an exact key wins.
      if (!exact.has(key)) exact.set(key, route.operation);
    }
  }
  const methods = new Set(wild.map((r) => r.method).filter((m) => m !== "*"));
  methods.add("HEAD");
  const byMethod = new Map<string, CompiledRoute[]>();
  for (const m of methods) {
    if (m === "HEAD") {
      const list = wild.filter((r) => r.method === "HEAD" || r.method === "GET" || r.method === "*");
      byMethod.set(m, list.sort((a, b) => compareRoutes(a, b) || headFirst(a, b)));
    } else {
      byMethod.set(m, wild.filter((r) => r.method === m || r.method === "*"));
    }
  }
  return { exact, byMethod, anyMethod: wild.filter((r) => r.method === "*") };
}

function indexFor(doc: Pick<CompiledPolicyBody, "routes">): RouteIndex {
  let index = indexes.get(doc);
  if (!index) {
    index = buildIndex(doc.routes);
    indexes.set(doc, index);
  }
  return index;
}

/** The operation name a request maps to (`GET /v1/orders/42` or a bare name), or null. */
export function resolveOperationName(
  doc: Pick<CompiledPolicyBody, "routes" | "operations">,
  request: string,
): string | null {
  const text = request.trim();
  const space = text.indexOf(" ");
  if (space === -1) return Object.hasOwn(doc.operations, text) ? text : null;
  const rawMethod = text.slice(0, space);
  const method = /[a-z]/.test(rawMethod) ? rawMethod.toUpperCase() : rawMethod;
  const index = indexFor(doc);
  // Fast path: a plain path (lower-case, nothing to decode or resolve) is its own exact-map key.
  let path = text.slice(space + 1).trimStart();
  const cut = path.search(/[?#]/);
  if (cut !== -1) path = path.slice(0, cut);
  let segments: string[] | null = null;
  if (isPlainPath(path)) {
    if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  } else {
    segments = normalizePath(path);
    path = `/${segments.join("/")}`;
  }
  const exact =
    index.exact.get(`${method} ${path}`) ?? (method === "HEAD" ? index.exact.get(`GET ${path}`) : undefined) ?? index.exact.get(`* ${path}`);
  if (exact !== undefined) return exact;
  segments ??= pathSegments(path);
  const candidates = index.byMethod.get(method) ?? index.anyMethod;
  for (const route of candidates) if (routeMatches(route, segments)) return route.operation;
  return null;
}

/** Resolves `GET /v1/orders/42` or `export` to its operation; null when nothing matches. */
export function resolveOperation(
  doc: Pick<CompiledPolicyBody, "routes" | "operations">,
  request: string,
): CompiledOperation | null {
  const name = resolveOperationName(doc, request);
  return name === null ? null : (doc.operations[name] ?? null);
}
