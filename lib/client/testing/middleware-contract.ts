/**
 * What every HTTP middleware must do, as one scenario run against a real server of each framework
 * (with the middleware installed) and a real decision server. The app under test serves:
 * `GET /v1/orders/:id` (200 `{"id"}`), `GET /v1/hold?ms=N` (answers after N ms), `GET /healthz`
 * (skipped by the middleware), and counts the requests its handlers saw. Its middleware reads the
 * cost from `X-Test-Cost` (see `testCost`).
 */
import { expect } from "vitest";
import type { ClientKeys } from "./decision";

export interface AppUnderTest {
  /** The app with a middleware whose client reaches the decision server. */
  url: string;
  /** The same app with a client whose decision server is down and onError "closed". */
  closedUrl: string;
  /** Requests the app's handlers have served so far. */
  handled(): number | Promise<number>;
  /** Whether the middleware can hold a concurrency lease until the response ends (a Next.js proxy cannot). */
  leases?: boolean;
}

const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers, signal: AbortSignal.timeout(10_000) });

async function problemOf(res: Response) {
  expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  return (await res.json()) as { type: string; title: string; status: number; reason: string; detail: string; retryAfterSeconds?: number };
}

export async function expectMiddlewareContract(app: AppUnderTest, keys: ClientKeys): Promise<void> {
  // Allowed: the handler runs and the RateLimit headers count down.
  const before = await app.handled();
  for (let i = 0; i < 5; i++) {
    const res = await get(`${app.url}/v1/orders/7?page=${i}`, { "x-api-key": keys.free });
    expect(res.status, `request ${i + 1}`).toBe(200);
    expect(await res.json()).toEqual({ id: "7" });
    expect(res.headers.get("ratelimit-remaining")).toBe(String(4 - i));
    expect(res.headers.get("ratelimit-limit")).toBe("5");
    expect(res.headers.get("ratelimit")).toMatch(new RegExp(`^"[^"]+";r=${4 - i};t=\\d+$`));
    expect(res.headers.get("ratelimit-policy")).toMatch(/;q=5;w=3600$/);
  }
  expect((await app.handled()) - before).toBe(5);

  // Denied: 429 with the decision's headers and a problem body; the handler never runs.
  const denied = await get(`${app.url}/v1/orders/7`, { "x-api-key": keys.free });
  expect(denied.status).toBe(429);
  const retryAfter = Number(denied.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThan(0);
  expect(denied.headers.get("ratelimit-reset")).toBe(String(retryAfter));
  expect(denied.headers.get("ratelimit")).toBe(`${denied.headers.get("ratelimit-policy")!.split(";")[0]};r=0;t=${retryAfter}`);
  expect(await problemOf(denied)).toEqual({
    type: "about:blank",
    title: "Too Many Requests",
    status: 429,
    reason: "rate_limited",
    detail: `rate limit exceeded; retry in ${retryAfter} s`,
    retryAfterSeconds: retryAfter,
  });
  expect((await app.handled()) - before).toBe(5);

  // The key may come as a bearer token too.
  expect((await get(`${app.url}/v1/orders/1`, { authorization: `Bearer ${keys.free2}` })).status).toBe(200);

  // 401 without a key or with an unknown one, 403 for a suspended tenant.
  const none = await get(`${app.url}/v1/orders/1`);
  expect(none.status).toBe(401);
  expect(await problemOf(none)).toMatchObject({ status: 401, reason: "unknown_key" });
  expect((await get(`${app.url}/v1/orders/1`, { "x-api-key": "sk_test_nobody_0000001" })).status).toBe(401);
  const suspended = await get(`${app.url}/v1/orders/1`, { "x-api-key": keys.suspended });
  expect(suspended.status).toBe(403);
  expect(await problemOf(suspended)).toMatchObject({ status: 403, title: "Forbidden", reason: "tenant_suspended" });

  // What the decision API calls invalid (here a cost of 0, from the app's `cost` reader) is a 400, not a crash.
  const invalid = await get(`${app.url}/v1/orders/1`, { "x-api-key": keys.free2, "x-test-cost": "0" });
  expect(invalid.status).toBe(400);
  expect(await problemOf(invalid)).toMatchObject({ status: 400, reason: "invalid_request", detail: expect.stringMatching(/cost: expected an integer ≥ 1/) });
  // A key longer than any key can be is unknown without asking.
  expect((await get(`${app.url}/v1/orders/1`, { "x-api-key": "k".repeat(600) })).status).toBe(401);

  // Skipped requests are not asked about.
  const health = await get(`${app.url}/healthz`);
  expect(health.status).toBe(200);
  expect(health.headers.get("ratelimit")).toBeNull();

  if (app.leases !== false) await expectLeaseHeldUntilTheEnd(app, keys);

  // Decision API down and onError "closed": 503 with a problem body.
  const closed = await get(`${app.closedUrl}/v1/orders/1`, { "x-api-key": keys.free2 });
  expect(closed.status).toBe(503);
  expect(await problemOf(closed)).toMatchObject({ status: 503, title: "Service Unavailable", reason: "store_unavailable" });
}

/** A concurrency lease is held while the response is in flight and released when it ends. */
async function expectLeaseHeldUntilTheEnd(app: AppUnderTest, keys: ClientKeys): Promise<void> {
  const holding = get(`${app.url}/v1/hold?ms=600`, { "x-api-key": keys.conc });
  await new Promise((r) => setTimeout(r, 250));
  const second = await get(`${app.url}/v1/hold?ms=0`, { "x-api-key": keys.conc });
  expect(second.status).toBe(429);
  expect(await problemOf(second)).toMatchObject({ reason: "concurrency_limited" });
  expect((await holding).status).toBe(200);
  let after = 0;
  for (let i = 0; i < 40 && after !== 200; i++) {
    // The release goes out as the response closes: give it a moment to reach the decision server.
    if (i > 0) await new Promise((r) => setTimeout(r, 50));
    after = (await get(`${app.url}/v1/hold?ms=0`, { "x-api-key": keys.conc })).status;
  }
  expect(after).toBe(200);
}

/** The `cost` reader every app under test uses: `X-Test-Cost`, when present. */
export function testCost(value: string | null | undefined): number | undefined {
  return value === null || value === undefined ? undefined : Number(value);
}
