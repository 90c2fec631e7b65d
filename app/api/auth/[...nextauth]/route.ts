/**
 * next-auth's endpoints. A credentials sign-in for an account locked by the login rate limit
 * (5 failures in 15 minutes) is answered 429 with Retry-After before next-auth sees it.
 */
import NextAuth from "next-auth";
import { NextResponse, type NextRequest } from "next/server";
import { db } from "@/lib/db/client";
import { authOptions, RATE_LIMITED_ERROR } from "@/lib/auth/options";
import { loginLockout } from "@/lib/services/login";

type Context = { params: Promise<{ nextauth: string[] }> };

async function handler(request: NextRequest, context: Context): Promise<Response> {
  return NextAuth(request, context, authOptions()) as Promise<Response>;
}

export const GET = handler;

export async function POST(request: NextRequest, context: Context): Promise<Response> {
  const { nextauth } = await context.params;
  if (nextauth.join("/") === "callback/credentials") {
    const form = await request.clone().formData().catch(() => null);
    const email = form?.get("email");
    if (typeof email === "string" && email.length > 0 && email.length <= 320) {
      const lockout = await loginLockout(db(), email, Date.now());
      if (lockout.locked) {
        const url = new URL(`/login?error=${RATE_LIMITED_ERROR}`, request.url).toString();
        return NextResponse.json(
          { url, error: RATE_LIMITED_ERROR, retryAfterSeconds: lockout.retryAfterSeconds },
          { status: 429, headers: { "Retry-After": String(lockout.retryAfterSeconds) } },
        );
      }
    }
  }
  return handler(request, context);
}
