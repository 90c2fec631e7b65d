/**
 * How long a server asked a client to wait, read from its answer (pure: the clock is an argument).
 *
 * In order of precedence:
 * 1. `Retry-After` (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date. A date is measured against
 *    the answer's own `Date` header when it has one, so a client whose clock is off still waits
 *    what the server meant.
 * 2. `RateLimit` (draft-ietf-httpapi-ratelimit-headers, a structured-field list
 *    `"name";r=0;t=17, "other";r=5;t=3`): the longest `t` of the exhausted items (`r=0`), else
 *    the longest `t` of all.
 * 3. The legacy `RateLimit-Reset`: delta seconds; a value that can only be a Unix time
 *    (≥ 1e9) is read as one, as some APIs send it.
 */

/** Unix times in seconds are above this; delta-seconds never are (31 years). */
const EPOCH_SECONDS_FLOOR = 1_000_000_000;

/** `Retry-After` in ms from `nowMs`, or null when absent or unreadable. */
export function retryAfterMs(value: string | null, nowMs: number, dateHeader: string | null = null): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // Every HTTP-date form names its month in letters; Date.parse alone would read "-5" as a year.
  const at = /[A-Za-z]{3}/.test(v) ? Date.parse(v) : Number.NaN;
  if (Number.isNaN(at)) return null;
  const reference = dateHeader === null ? Number.NaN : Date.parse(dateHeader);
  return Math.max(0, at - (Number.isNaN(reference) ? nowMs : reference));
}

export interface RateLimitItem {
  name: string;
  params: Record<string, string>;
}

/** Splits a structured-field list on commas outside quoted strings. */
function splitOutsideQuotes(value: string, separator: string): string[] {
  const parts: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (quoted && c === "\\" && i + 1 < value.length) {
      current += c + value[++i];
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === separator && !quoted) {
      parts.push(current);
      current = "";
    } else current += c;
  }
  parts.push(current);
  return parts;
}

function unquote(text: string): string {
  const t = text.trim();
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1).replace(/\\(.)/g, "$1") : t;
}

/** Parses `RateLimit` / `RateLimit-Policy` into items with their parameters (lenient). */
export function parseRateLimitList(value: string): RateLimitItem[] {
  const items: RateLimitItem[] = [];
  for (const member of splitOutsideQuotes(value, ",")) {
    const [name, ...params] = splitOutsideQuotes(member, ";");
    if (name === undefined || name.trim() === "") continue;
    const out: Record<string, string> = {};
    for (const p of params) {
      const eq = p.indexOf("=");
      if (eq === -1) out[p.trim()] = "?1";
      else out[p.slice(0, eq).trim()] = unquote(p.slice(eq + 1));
    }
    items.push({ name: unquote(name), params: out });
  }
  return items;
}

/** Seconds from `RateLimit`'s `t` parameters (see the module comment), in ms; null if none. */
export function rateLimitResetMs(value: string | null): number | null {
  if (value === null) return null;
  let exhausted: number | null = null;
  let any: number | null = null;
  for (const item of parseRateLimitList(value)) {
    const t = item.params.t;
    if (t === undefined || !/^\d+$/.test(t)) continue;
    const ms = Number(t) * 1000;
    any = Math.max(any ?? 0, ms);
    if (item.params.r === "0") exhausted = Math.max(exhausted ?? 0, ms);
  }
  return exhausted ?? any;
}

/** Legacy `RateLimit-Reset`: delta seconds, or a Unix time in seconds; in ms from `nowMs`. */
export function legacyResetMs(value: string | null, nowMs: number): number | null {
  if (value === null || !/^\d+$/.test(value.trim())) return null;
  const n = Number(value.trim());
  return n >= EPOCH_SECONDS_FLOOR ? Math.max(0, n * 1000 - nowMs) : n * 1000;
}

/** The wait a response asks for (ms), by the precedence above; null when it names none. */
export function serverDelayMs(headers: Headers, nowMs: number): number | null {
  return (
    retryAfterMs(headers.get("retry-after"), nowMs, headers.get("date")) ??
    rateLimitResetMs(headers.get("ratelimit")) ??
    legacyResetMs(headers.get("ratelimit-reset"), nowMs)
  );
}
