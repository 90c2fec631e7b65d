/**
 * next-auth's endpoints. A credentials sign-in is checked here first (lib/auth/login.ts: the
 * lockout counted and checked in one step, keyed by account and client address): a locked one is
 * answered 429 with Retry-After before next-auth sees it; otherwise next-auth uses this result.
 */
import NextAuth from "next-auth";
import { NextResponse, type NextRequest } from "next/server";
import { requestClientAddress } from "@/lib/auth/client-address";
import { db } from "@/lib/db/client";
import { authOptions, RATE_LIMITED_ERROR, withCheckedSignIn } from "@/lib/auth/options";
import { login } from "@/lib/auth/login";

type Context = { params: Promise<{ nextauth: string[] }> };

async function handler(request: NextRequest, context: Context): Promise<Response> {
  return NextAuth(request, context, authOptions()) as Promise<Response>;
}

export const GET = handler;

function formText(form: FormData | null, name: string): string {
  const value = form?.get(name);
  return typeof value === "string" ? value : "";
}

export async function POST(request: NextRequest, context: Context): Promise<Response> {
  const { nextauth } = await context.params;
  if (nextauth.join("/") !== "callback/credentials") return handler(request, context);
  const form = await request.clone().formData().catch(() => null);
  const credentials = { email: formText(form, "email"), password: formText(form, "password") };
  const result = await login(db(), credentials, Date.now(), requestClientAddress(request.headers));
  if (!result.ok && result.reason === "rate_limited") {
    const url = new URL(`/login?error=${RATE_LIMITED_ERROR}`, request.url).toString();
    return NextResponse.json(
      { url, error: RATE_LIMITED_ERROR, retryAfterSeconds: result.retryAfterSeconds },
      { status: 429, headers: { "Retry-After": String(result.retryAfterSeconds) } },
    );
  }
  return withCheckedSignIn({ credentials, result }, () => handler(request, context));
}
