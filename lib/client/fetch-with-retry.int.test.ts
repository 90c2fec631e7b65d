/**
 * fetchWithRetry against a scripted upstream (a real HTTP server on loopback). Waits are real
 * where the test is about honouring them (Retry-After: 1, the shared cooldown) and recorded by a
 * fake clock where the test is about which wait was chosen.
 */
import { afterEach, describe, expect, it } from "vitest";
import { OriginCooldowns } from "./cooldowns";
import { fetchWithRetry } from "./fetch-with-retry";
import { FakeClock } from "./testing/fake-clock";
import { type Scripted, scriptedUpstream, type SeenRequest, type Upstream } from "./testing/upstream";

let upstream: Upstream | null = null;
afterEach(async () => {
  await upstream?.close();
  upstream = null;
});

async function serve(script: (req: SeenRequest) => Scripted | Promise<Scripted>): Promise<Upstream> {
  upstream = await scriptedUpstream(script);
  return upstream;
}

/** Answers `first` to the first `n` requests, then 200. */
const thenOk =
  (n: number, first: Scripted) =>
  (req: SeenRequest): Scripted =>
    req.n < n ? first : { status: 200, body: "ok" };

describe("fetchWithRetry", () => {
  it("honours Retry-After: 1 — the retry comes a second later, not before", async () => {
    const up = await serve(thenOk(1, { status: 429, headers: { "retry-after": "1" } }));
    const res = await fetchWithRetry(`${up.url}/v1/orders`, {}, { cooldowns: new OriginCooldowns(), baseDelayMs: 50 });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
    expect(up.seen).toHaveLength(2);
    const gap = up.seen[1]!.atMs - up.seen[0]!.atMs;
    expect(gap).toBeGreaterThanOrEqual(1000);
    expect(gap).toBeLessThan(1000 + 50 + 400);
  });

  it("waits for an HTTP-date Retry-After, measured against the answer's Date", async () => {
    const clock = new FakeClock();
    const up = await serve((req) => {
      if (req.n > 0) return { status: 200 };
      const date = new Date(Math.floor(Date.now() / 1000) * 1000);
      return { status: 503, headers: { date: date.toUTCString(), "retry-after": new Date(date.getTime() + 3000).toUTCString() } };
    });
    const res = await fetchWithRetry(up.url, {}, { clock, random: () => 0, cooldowns: new OriginCooldowns() });
    expect(res.status).toBe(200);
    expect(clock.sleeps).toEqual([3000]);
  });

  it("without Retry-After, waits what RateLimit says, else the legacy RateLimit-Reset", async () => {
    const clock = new FakeClock();
    const up = await serve((req): Scripted => {
      if (req.n === 0) return { status: 429, headers: { ratelimit: '"free-api_key";r=0;t=2, "free-tenant";r=40;t=50' } };
      if (req.n === 1) return { status: 429, headers: { "ratelimit-reset": "3" } };
      return { status: 200 };
    });
    const res = await fetchWithRetry(up.url, {}, { clock, random: () => 0, cooldowns: new OriginCooldowns() });
    expect(res.status).toBe(200);
    expect(clock.sleeps).toEqual([2000, 3000]);
  });

  it("sends one Idempotency-Key on every attempt of a retried POST (its own, or the caller's)", async () => {
    const up = await serve((req) => (req.n % 3 < 2 ? { status: 503, headers: { "retry-after": "0" } } : { status: 201 }));
    const clock = new FakeClock();
    const options = { clock, cooldowns: new OriginCooldowns(), baseDelayMs: 1 };
    const made = await fetchWithRetry(`${up.url}/v1/exports`, { method: "POST", body: '{"n":1}', headers: { "content-type": "application/json" } }, options);
    expect(made.status).toBe(201);
    const keys = up.seen.slice(0, 3).map((s) => s.headers["idempotency-key"]);
    expect(keys[0]).toMatch(/^[0-9a-f-]{32,36}$/);
    expect(new Set(keys).size).toBe(1);
    expect(up.seen.slice(0, 3).map((s) => s.body)).toEqual(['{"n":1}', '{"n":1}', '{"n":1}']);

    const own = await fetchWithRetry(`${up.url}/v1/exports`, { method: "PATCH", body: "x", headers: { "Idempotency-Key": "mine-1" } }, options);
    expect(own.status).toBe(201);
    expect(up.seen.slice(3).map((s) => s.headers["idempotency-key"])).toEqual(["mine-1", "mine-1", "mine-1"]);

    // Two calls never share a key.
    await fetchWithRetry(`${up.url}/v1/exports`, { method: "POST", body: "y" }, options);
    expect(up.seen[6]!.headers["idempotency-key"]).not.toBe(keys[0]);
    // GET gets none.
    up.seen.length = 0;
    await fetchWithRetry(`${up.url}/v1/orders`, {}, options);
    expect(up.seen.every((s) => s.headers["idempotency-key"] === undefined)).toBe(true);
  });

  it("never retries a 400 (nor any other status but 429 and 503)", async () => {
    for (const status of [400, 401, 403, 404, 409, 422, 500]) {
      const up = await serve(() => ({ status, body: "no" }));
      const res = await fetchWithRetry(up.url, { method: "POST", body: "x" }, { cooldowns: new OriginCooldowns(), clock: new FakeClock() });
      expect(res.status).toBe(status);
      expect(await res.text()).toBe("no");
      expect(up.seen).toHaveLength(1);
      await up.close();
      upstream = null;
    }
  });

  it("makes at most 1 + retries requests, then hands back the last 429 with its headers and body", async () => {
    const up = await serve(() => ({ status: 429, headers: { "retry-after": "1", ratelimit: '"q";r=0;t=1' }, body: "slow down" }));
    const clock = new FakeClock();
    const res = await fetchWithRetry(up.url, {}, { retries: 2, clock, cooldowns: new OriginCooldowns() });
    expect(up.seen).toHaveLength(3);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await res.text()).toBe("slow down");
    expect(clock.sleeps).toHaveLength(2);
    clock.sleeps.forEach((ms) => expect(ms).toBeGreaterThanOrEqual(1000));

    const none = await fetchWithRetry(up.url, {}, { retries: 0, clock, cooldowns: new OriginCooldowns() });
    expect(none.status).toBe(429);
    expect(up.seen).toHaveLength(4);
  });

  it("does not wait past its deadline or a named wait above maxDelayMs: the 429 comes back at once", async () => {
    const up = await serve(() => ({ status: 429, headers: { "retry-after": "30" } }));
    const clock = new FakeClock();
    const late = await fetchWithRetry(up.url, {}, { deadlineMs: 5_000, clock, cooldowns: new OriginCooldowns() });
    expect(late.status).toBe(429);
    const capped = await fetchWithRetry(up.url, {}, { maxDelayMs: 10_000, clock, cooldowns: new OriginCooldowns() });
    expect(capped.status).toBe(429);
    expect(up.seen).toHaveLength(2);
    expect(clock.sleeps).toEqual([]);
  });

  it("aborts an attempt still running at the deadline", async () => {
    const up = await serve(() => "hang");
    const started = Date.now();
    const error = await fetchWithRetry(up.url, {}, { deadlineMs: 300, cooldowns: new OriginCooldowns() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe("TimeoutError");
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("retries network errors with backoff, and throws the last one when the attempts run out", async () => {
    const up = await serve((req) => (req.n < 2 ? "destroy" : { status: 200, body: "ok" }));
    const clock = new FakeClock();
    const res = await fetchWithRetry(up.url, { method: "POST", body: "x" }, { clock, baseDelayMs: 100, random: () => 0.5, cooldowns: new OriginCooldowns() });
    expect(res.status).toBe(200);
    expect(clock.sleeps).toEqual([50, 100]);
    expect(new Set(up.seen.map((s) => s.headers["idempotency-key"])).size).toBe(1);

    await up.close();
    upstream = null;
    const down = await fetchWithRetry(up.url, {}, { retries: 2, clock, cooldowns: new OriginCooldowns() }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(TypeError);
    expect(clock.sleeps).toHaveLength(4);
  });

  it("backs off with full jitter: each retry's wait is uniform on [0, min(max, base·2^k)) (Kolmogorov–Smirnov)", async () => {
    const up = await serve(() => ({ status: 503 }));
    const calls = 200;
    const retries = 5;
    const base = 100;
    const max = 1_000;
    const byRetry: number[][] = Array.from({ length: retries }, () => []);
    for (let i = 0; i < calls; i++) {
      const clock = new FakeClock();
      await fetchWithRetry(up.url, {}, { retries, baseDelayMs: base, maxDelayMs: max, clock, cooldowns: false });
      expect(clock.sleeps).toHaveLength(retries);
      clock.sleeps.forEach((ms, k) => byRetry[k]!.push(ms));
    }
    expect(up.seen).toHaveLength(calls * (retries + 1));
    // Critical value of the one-sample KS statistic at α = 0.001: 1.95 / √n.
    const critical = 1.95 / Math.sqrt(calls);
    byRetry.forEach((delays, k) => {
      const cap = Math.min(max, base * 2 ** k);
      const sorted = [...delays].sort((a, b) => a - b);
      expect(sorted[0]).toBeGreaterThanOrEqual(0);
      expect(sorted[sorted.length - 1]).toBeLessThan(cap);
      let d = 0;
      sorted.forEach((x, i) => {
        const f = x / cap;
        d = Math.max(d, Math.abs((i + 1) / sorted.length - f), Math.abs(f - i / sorted.length));
      });
      expect(d, `retry ${k + 1}: KS distance ${d.toFixed(3)} from uniform on [0, ${cap})`).toBeLessThan(critical);
      // Not the same wait for everyone: most draws are distinct.
      expect(new Set(delays.map((x) => Math.round(x))).size).toBeGreaterThan(calls * 0.5 * Math.min(1, cap / calls));
    });
  });

  it("shares a cooldown per origin: 20 calls hearing 429 make one probe after it, not 20 retries", async () => {
    let limitedUntil = 0;
    const up = await serve((req) => {
      if (req.n < 20) {
        limitedUntil = Date.now() + 1000;
        return { status: 429, headers: { "retry-after": "1" }, delayMs: 20 };
      }
      // The probe: slow, so the others would pile in if they did not wait for it.
      return { status: 200, body: "ok", delayMs: req.n === 20 ? 200 : 0 };
    });
    const cooldowns = new OriginCooldowns();
    const results = await Promise.all(Array.from({ length: 20 }, () => fetchWithRetry(`${up.url}/v1/x`, {}, { cooldowns, baseDelayMs: 20 })));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(up.seen).toHaveLength(40);
    const afterBurst = up.seen.slice(20);
    // The first retry comes after the cooldown; while it is in flight nobody else is sent.
    expect(afterBurst[0]!.atMs).toBeGreaterThanOrEqual(limitedUntil - 25);
    const probeAnsweredAt = afterBurst[0]!.atMs + 200;
    expect(afterBurst.slice(1).every((s) => s.atMs >= probeAnsweredAt - 5)).toBe(true);
  });

  it("a call that cannot wait out its origin's cooldown is answered 429 locally, without reaching the server", async () => {
    const up = await serve(() => ({ status: 429, headers: { "retry-after": "10" } }));
    const cooldowns = new OriginCooldowns();
    const first = await fetchWithRetry(up.url, {}, { cooldowns, maxDelayMs: 5_000 });
    expect(first.status).toBe(429);
    const started = Date.now();
    const second = await fetchWithRetry(`${up.url}/other/path`, {}, { cooldowns, deadlineMs: 2_000 });
    expect(Date.now() - started).toBeLessThan(200);
    expect(second.status).toBe(429);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThanOrEqual(9);
    expect(second.headers.get("content-type")).toBe("application/problem+json");
    expect(up.seen).toHaveLength(1);
    expect(cooldowns.remainingMs(up.url, Date.now())).toBeGreaterThan(9_000);
  });

  it("rejects nonsense options with a clear message", async () => {
    await expect(fetchWithRetry("http://127.0.0.1:1/", {}, { retries: -1 })).rejects.toThrow(/retries: expected an integer ≥ 0/);
    await expect(fetchWithRetry("http://127.0.0.1:1/", {}, { baseDelayMs: Number.NaN })).rejects.toThrow(/baseDelayMs/);
  });
});
