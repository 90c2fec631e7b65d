import type { NextRequest } from "next/server";
import { sluiceProxy } from "sluice/client/next";
import { client, testCost } from "./sluice";

// The operation is the path the client asked for, without this app's /proxied mount.
const sluice = sluiceProxy<NextRequest>({
  client,
  cost: testCost,
  skip: (req) => req.nextUrl.pathname === "/proxied/healthz",
  operation: (req) => `${req.method} ${req.nextUrl.pathname.replace(/^\/proxied/, "")}`,
});

export async function proxy(request: NextRequest) {
  return sluice(request);
}

export const config = { matcher: "/proxied/:path*" };
