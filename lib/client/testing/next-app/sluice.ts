/**
 * The SDK as a Next.js app uses it, configured from the environment the test starts `next start` with.
 * `sluice/client` here is the built package (dist/client), resolved as a consumer resolves it.
 */
import { SluiceClient } from "sluice/client";

export const client = new SluiceClient({
  url: process.env.SLUICE_URL ?? "http://127.0.0.1:8787",
  token: process.env.SLUICE_TOKEN ?? "unset",
  timeoutMs: Number(process.env.SLUICE_TIMEOUT_MS ?? 2000),
  onError: process.env.SLUICE_ON_ERROR === "closed" ? "closed" : "open",
});

const counter = globalThis as unknown as { handled?: number };

/** Requests the handlers served (the test asserts denied ones never reach them). */
export function handled(increment = 0): number {
  counter.handled = (counter.handled ?? 0) + increment;
  return counter.handled;
}

export function testCost(req: Request): number | undefined {
  const value = req.headers.get("x-test-cost");
  return value === null ? undefined : Number(value);
}
