/**
 * SluiceClient against a real decision server (its own process, real Redis), and against a
 * decision API that is down or does not answer.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../net/ports";
import { SluiceClient, SluiceRequestError, type SluiceUnavailableError } from "./client";
import { FakeClock } from "./testing/fake-clock";
import { type ClientTestServer, startDecisionServer } from "./testing/decision";

let sluice: ClientTestServer;
let client: SluiceClient;
/** Accepts connections and never answers: a decision API that hangs. */
let blackHole: http.Server;
let blackHoleUrl: string;

beforeAll(async () => {
  sluice = await startDecisionServer(["sdk"]);
  // The contract, not the failure path: generous on a shared machine (the failure tests use 50 ms).
  client = new SluiceClient({ url: sluice.url, token: sluice.token, timeoutMs: 2_000 });
  blackHole = http.createServer(() => undefined);
  await new Promise<void>((r) => blackHole.listen(0, "127.0.0.1", r));
  blackHoleUrl = `http://127.0.0.1:${(blackHole.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await sluice?.stop();
  blackHole?.closeAllConnections();
  blackHole?.close();
});

describe("SluiceClient against a real decision server", () => {
  it("check: five 200s, then a denial as a value, with retryAfterSeconds and the headers", async () => {
    const keys = sluice.keys("sdk");
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await client.check({ key: keys.free, operation: "GET /v1/orders/42", ip: "203.0.113.7" }));
    expect(answers.slice(0, 5).map((a) => [a.allowed, a.status, a.remaining])).toEqual([
      [true, 200, 4],
      [true, 200, 3],
      [true, 200, 2],
      [true, 200, 1],
      [true, 200, 0],
    ]);
    const denied = answers[5]!;
    expect(denied).toMatchObject({ allowed: false, status: 429, reason: "rate_limited", tenant: "sdk-free", tier: "free", operation: "orders-read" });
    expect(denied.retryAfterSeconds).toBeGreaterThan(0);
    expect(denied.retryAfterSeconds).toBeLessThanOrEqual(3600);
    expect(denied.headers["Retry-After"]).toBe(String(denied.retryAfterSeconds));
    expect(denied.headers.RateLimit).toMatch(/;r=0;t=\d+$/);
    expect(denied.error).toBeUndefined();
  });

  it("checkMany: each request decided on its own, in order, past the batch limit of 100", async () => {
    const keys = sluice.keys("sdk");
    const requests = Array.from({ length: 150 }, (_, i) => (i % 50 === 7 ? { key: "sk_nobody", operation: "GET /v1/orders" } : { key: keys.conc, operation: "GET /v1/orders", dryRun: true }));
    const answers = await client.checkMany(requests);
    expect(answers).toHaveLength(150);
    answers.forEach((a, i) => expect(a.status, `answer ${i}`).toBe(i % 50 === 7 ? 401 : 200));
    expect(await client.checkMany([])).toEqual([]);
  });

  it("unknown key → 401, suspended tenant → 403, as values", async () => {
    expect(await client.check({ key: "sk_nobody", operation: "GET /v1/orders" })).toMatchObject({ allowed: false, status: 401, reason: "unknown_key" });
    expect(await client.check({ key: sluice.keys("sdk").suspended, operation: "GET /v1/orders" })).toMatchObject({ allowed: false, status: 403, reason: "tenant_suspended" });
  });

  it("a request the decision API calls invalid throws SluiceRequestError naming the field", async () => {
    const error = await client.check({ key: "k", operation: "GET /", cost: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SluiceRequestError);
    expect((error as SluiceRequestError).field).toBe("cost");
    expect((error as SluiceRequestError).message).toMatch(/cost: expected an integer ≥ 1/);
  });

  it("acquire with `await using` holds the concurrency lease for the block and releases it after", async () => {
    const request = { key: sluice.keys("sdk").conc, operation: "GET /v1/hold" };
    {
      await using lease = await client.acquire(request);
      expect(lease.allowed).toBe(true);
      expect(lease.answer.leaseId).toBeTruthy();
      const second = await client.acquire(request);
      expect(second.answer).toMatchObject({ allowed: false, reason: "concurrency_limited" });
      expect(second.released).toBe(true);
      expect(lease.released).toBe(false);
    }
    const after = await client.acquire(request);
    expect(after.allowed).toBe(true);
    expect(await after.release()).toBe(true);
    // Released once: a second call frees nothing more.
    expect(await after.release()).toBe(true);
    const again = await client.acquire(request);
    expect(again.allowed).toBe(true);
    await again.release();
  });

  it("withLease runs the work only when allowed and releases the lease even when the work throws", async () => {
    const request = { key: sluice.keys("sdk").conc, operation: "GET /v1/hold" };
    const failed = client.withLease(request, async () => {
      const inside = await client.withLease(request, () => "never");
      expect(inside).toMatchObject({ allowed: false, answer: { reason: "concurrency_limited" } });
      throw new Error("boom");
    });
    await expect(failed).rejects.toThrow("boom");
    const ok = await client.withLease(request, (answer) => answer.tenant);
    expect(ok).toEqual({ allowed: true, answer: expect.objectContaining({ allowed: true }), value: "sdk-conc" });
  });

  it("pace waits a shaping limit's delayMs and says go; a denial says when to retry", async () => {
    const clock = new FakeClock();
    const paced = new SluiceClient({ url: sluice.url, token: sluice.token, timeoutMs: 2_000, clock });
    const request = { key: sluice.keys("sdk").shaped, operation: "GET /v1/shaped" };
    const results = [];
    for (let i = 0; i < 6; i++) results.push(await paced.pace(request));
    const go = results.filter((r) => r.allowed);
    expect(go.length).toBeGreaterThanOrEqual(4);
    // 2 per second, queue of 1, maxDelay 2 s: later requests wait longer and longer, and the wait is the answer's.
    const waits = go.map((r) => (r.allowed ? r.waitedMs : 0));
    expect(waits[0]).toBe(0);
    expect(Math.max(...waits)).toBeGreaterThan(900);
    expect(clock.sleeps).toEqual(waits.filter((w) => w > 0));
    const stop = results.find((r) => !r.allowed);
    expect(stop).toBeDefined();
    if (stop && !stop.allowed) expect(stop.retryAfterMs).toBeGreaterThanOrEqual(1000);

    const never = await paced.pace({ key: "sk_nobody", operation: "GET /v1/shaped" });
    expect(never).toMatchObject({ allowed: false, retryAfterMs: null });
  });
});

describe("when the decision API cannot be asked", () => {
  const cases = [
    ["is down (connection refused)", async () => `http://127.0.0.1:${await freePort()}`],
    ["does not answer", async () => blackHoleUrl],
  ] as const;

  for (const [what, url] of cases) {
    it(`${what}: open allows degraded, closed denies 503, both within timeoutMs`, async () => {
      const errors: SluiceUnavailableError[] = [];
      const target = await url();
      for (const onError of ["open", "closed"] as const) {
        const c = new SluiceClient({ url: target, token: "t", timeoutMs: 50, onError, onUnavailable: (e) => errors.push(e) });
        for (let i = 0; i < 5; i++) {
          const started = performance.now();
          const answer = await c.check({ key: "k", operation: "GET /v1/orders" });
          const tookMs = performance.now() - started;
          // 50 ms plus the event loop's own lag on a busy machine; the budget is the SDK's timer.
          expect(tookMs).toBeLessThan(50 + 100);
          if (onError === "open") expect(answer).toMatchObject({ allowed: true, status: 200, reason: "ok", degraded: true });
          else expect(answer).toMatchObject({ allowed: false, status: 503, reason: "store_unavailable" });
          expect(answer.error).toMatch(what.startsWith("is down") ? /unreachable/ : /did not answer within 50 ms/);
        }
      }
      expect(errors).toHaveLength(10);
      expect(errors[0]!.path).toBe("/v1/check");
    });
  }

  it("a wrong service token is a failure to ask, not a denial of the end client", async () => {
    const c = new SluiceClient({ url: sluice.url, token: "wrong", timeoutMs: 2_000, onError: "closed" });
    const answer = await c.check({ key: sluice.keys("sdk").free2, operation: "GET /v1/orders" });
    expect(answer).toMatchObject({ allowed: false, status: 503, reason: "store_unavailable" });
    expect(answer.error).toMatch(/401 unauthorized/);
    expect(await c.release("x")).toBe(false);
  });

  it("refuses nonsense options when constructed", () => {
    expect(() => new SluiceClient({ url: "localhost:8787", token: "t" })).toThrow(/url: expected an absolute http\(s\) URL/);
    expect(() => new SluiceClient({ url: "http://x", token: " " })).toThrow(/token/);
    expect(() => new SluiceClient({ url: "http://x", token: "t", timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => new SluiceClient({ url: "http://x", token: "t", onError: "maybe" as "open" })).toThrow(/onError/);
  });
});
