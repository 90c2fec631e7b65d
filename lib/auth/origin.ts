/**
 * The one Origin check of the control plane: the admin API's cookie-authenticated requests
 * (lib/http/admin-auth.ts) and every server action (lib/auth/action.ts). Next.js refuses a server
 * action whose Origin names another host, but runs one without an Origin header at all (a
 * handcrafted request); this refuses both (docs/security.md).
 */

/** What is read of a request's headers (a Fetch Headers, or next/headers' read-only copy). */
export interface HeaderReader {
  get(name: string): string | null;
}

/**
 * The request's Origin (or Referer) names this host; true for GET/HEAD. The host is the one the
 * browser addressed (`X-Forwarded-Host` behind a proxy, else `Host`).
 */
export function sameOrigin(request: { method: string; headers: HeaderReader; url?: string }): boolean {
  if (request.method === "GET" || request.method === "HEAD") return true;
  const origin = request.headers.get("origin") ?? request.headers.get("referer");
  if (!origin) return false;
  const host = request.headers.get("x-forwarded-host") ?? request.headers.get("host") ?? (request.url ? new URL(request.url).host : null);
  try {
    return host !== null && new URL(origin).host === host;
  } catch {
    return false;
  }
}

/** The refusal a server action answers when its request is not from this site, else null. */
export function actionOriginRefusal(headers: HeaderReader): { ok: false; status: 403; message: string } | null {
  return sameOrigin({ method: "POST", headers })
    ? null
    : { ok: false, status: 403, message: "Cross-origin request refused: a server action must come from this site (its Origin header)." };
}
