/**
 * Redirects anonymous browsers to /login. A convenience only: every page, server action and
 * route handler checks the session and role itself (CVE-2025-29927 let a header skip middleware).
 */
import { getToken } from "next-auth/jwt";
import { NextResponse, type NextRequest } from "next/server";
import { portalRefusal, verifyPortalLink } from "@/lib/auth/portal-link";
import { authSecret } from "@/lib/auth/secret";

/**
 * The customer portal (`/portal/<tenant>?exp=…&sig=…`) needs no session: its signed link is the
 * credential. A link that is changed, forged or expired is answered 403 here, with nothing of any
 * tenant; the page checks the link again itself.
 */
function portal(request: NextRequest): NextResponse {
  const { pathname, searchParams } = request.nextUrl;
  const tenant = decodeURIComponent(pathname.slice("/portal/".length));
  const check = verifyPortalLink({ tenant, exp: searchParams.get("exp") ?? undefined, sig: searchParams.get("sig") ?? undefined }, Date.now());
  if (check.ok) return NextResponse.next();
  const text = portalRefusal(check.reason);
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>Usage</title></head><body style="font-family:system-ui,sans-serif;text-align:center;padding:4rem 1rem"><main data-testid="portal-refused"><h1 style="font-size:1.125rem">${text}</h1><p style="color:#475569;font-size:.875rem">Ask your provider for a new usage link.</p></main></body></html>`;
  return new NextResponse(html, { status: 403, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "referrer-policy": "no-referrer" } });
}

export async function proxy(request: NextRequest) {
  if (request.nextUrl.pathname.startsWith("/portal/")) return portal(request);
  const token = await getToken({ req: request, secret: authSecret() });
  if (token) return NextResponse.next();
  const login = new URL("/login", request.url);
  login.searchParams.set("callbackUrl", request.nextUrl.pathname + request.nextUrl.search);
  return NextResponse.redirect(login);
}

export const config = {
  // Not the login page, next-auth, the token-authenticated REST API, or static assets. The
  // customer portal goes through proxy() too, to its own check (no session needed).
  matcher: ["/((?!login|api/|_next/|favicon.ico|robots.txt).*)"],
};
