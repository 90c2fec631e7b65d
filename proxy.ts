/**
 * Redirects anonymous browsers to /login. A convenience only: every page, server action and
 * route handler checks the session and role itself (CVE-2025-29927 let a header skip middleware).
 */
import { getToken } from "next-auth/jwt";
import { NextResponse, type NextRequest } from "next/server";
import { authSecret } from "@/lib/auth/secret";

export async function proxy(request: NextRequest) {
  const token = await getToken({ req: request, secret: authSecret() });
  if (token) return NextResponse.next();
  const login = new URL("/login", request.url);
  login.searchParams.set("callbackUrl", request.nextUrl.pathname + request.nextUrl.search);
  return NextResponse.redirect(login);
}

export const config = {
  // Not the login page, the customer portal (its signed link is its credential), next-auth, the
  // token-authenticated REST API, or static assets.
  matcher: ["/((?!login|portal/|api/|_next/|favicon.ico|robots.txt).*)"],
};
