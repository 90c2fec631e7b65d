/**
 * POST /v1/settle and SluiceClient.settle against a real decision server and real Redis: a check
 * with `reserve` answers a reservationId; settling refunds max(0, reserved − actual) once, the same
 * settle again answers the same marked replayed, another actual cost is 409, an unknown id 404, a
 * bad body 400 naming the field, no service token 401.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SluiceClient } from "./client";
import { type ClientTestServer, startDecisionServer } from "./testing/decision";

let sluice: ClientTestServer;
let client: SluiceClient;

/** A tenant whose `metered` operation allows 50 units per hour (an exact log: no window edge). */
const extra = {
  operations: [{ name: "metered", match: ["POST /v1/metered"] }],
  tiers: [{ name: "meter", limits: [{ operation: "metered", scope: "tenant" as const, algorithm: "sliding_window_log" as const, limit: 50, window: "1h" }] }],
  tenants: [
    { slug: "settle-a", name: "settle a", tier: "meter", keys: [{ name: "a", key: "sk_test_settle_a_0001" }] },
    { slug: "settle-b", name: "settle b", tier: "meter", keys: [{ name: "a", key: "sk_test_settle_b_0001" }] },
  ],
};

beforeAll(async () => {
  sluice = await startDecisionServer(["settle"], extra);
  client = new SluiceClient({ url: sluice.url, token: sluice.token, timeoutMs: 2_000 });
});

afterAll(async () => {
  await sluice?.stop();
});

async function post(path: string, body: unknown, token: string | null = sluice.token): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sluice.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** What is left of the tenant's 50 (a dry run consumes nothing). */
async function remaining(key: string): Promise<number> {
  const answer = await client.check({ key, operation: "POST /v1/metered", dryRun: true });
  return answer.remaining;
}

describe("POST /v1/settle", () => {
  it("refunds the difference once; the same settle again is the same answer, replayed; another actual cost is 409", async () => {
    const key = "sk_test_settle_a_0001";
    const reserved = await post("/v1/check", { key, operation: "POST /v1/metered", cost: 20, reserve: true });
    expect(reserved.status).toBe(200);
    expect(reserved.body).toMatchObject({ allowed: true, status: 200, remaining: 30 });
    const reservationId = reserved.body.reservationId;
    expect(reservationId).toMatch(/^rsv_[0-9a-f]{32}_/);
    expect(await remaining(key)).toBe(30);

    const first = await post("/v1/settle", { reservationId, actualCost: 7 });
    expect(first).toEqual({ status: 200, body: { reservationId, reservedCost: 20, actualCost: 7, refunded: 13, replayed: false } });
    expect(await remaining(key)).toBe(43);

    const again = await post("/v1/settle", { reservationId, actualCost: 7 });
    expect(again).toEqual({ status: 200, body: { ...first.body, replayed: true } });
    expect(await remaining(key)).toBe(43);

    const conflict = await post("/v1/settle", { reservationId, actualCost: 3 });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ error: { code: "conflict", field: "actualCost", message: expect.stringMatching(/settled with actualCost 7/) as unknown } });
    expect(await remaining(key)).toBe(43);
  });

  it("an actual cost above the reservation refunds nothing and charges nothing more", async () => {
    const key = "sk_test_settle_b_0001";
    const { body } = await post("/v1/check", { key, operation: "POST /v1/metered", cost: 5, reserve: true });
    expect(await post("/v1/settle", { reservationId: body.reservationId, actualCost: 9 })).toMatchObject({ status: 200, body: { reservedCost: 5, actualCost: 9, refunded: 0 } });
    expect(await remaining(key)).toBe(45);
  });

  it("no reservationId without reserve, on a denial or on a dry run", async () => {
    const key = sluice.keys("settle").free;
    expect((await post("/v1/check", { key, operation: "GET /v1/orders" })).body.reservationId).toBeUndefined();
    expect((await post("/v1/check", { key, operation: "GET /v1/orders", reserve: true, dryRun: true })).body.reservationId).toBeUndefined();
    const over = await post("/v1/check", { key: "sk_test_settle_b_0001", operation: "POST /v1/metered", cost: 51, reserve: true });
    expect(over.body).toMatchObject({ allowed: false, status: 429 });
    expect(over.body.reservationId).toBeUndefined();
  });

  it("an unknown or malformed reservation id is 404 naming reservationId", async () => {
    for (const reservationId of [`rsv_${"0".repeat(32)}_${Buffer.from(JSON.stringify([`{x}:rsv:${"0".repeat(32)}`])).toString("base64url")}`, "rsv_nope", "lease_1"]) {
      const res = await post("/v1/settle", { reservationId, actualCost: 1 });
      expect(res.status, reservationId).toBe(404);
      expect(res.body).toMatchObject({ error: { code: "unknown_reservation", field: "reservationId" } });
    }
  });

  it("a bad body is 400 naming the field; the reserve flag is validated on /v1/check", async () => {
    const cases: [unknown, string, RegExp][] = [
      [{ actualCost: 1 }, "reservationId", /reservationId: is required/],
      [{ reservationId: 7, actualCost: 1 }, "reservationId", /reservationId: expected a reservation id/],
      [{ reservationId: "rsv_x" }, "actualCost", /actualCost: is required/],
      [{ reservationId: "rsv_x", actualCost: -1 }, "actualCost", /actualCost: expected an integer ≥ 0/],
      [{ reservationId: "rsv_x", actualCost: 1.5 }, "actualCost", /actualCost: expected an integer ≥ 0/],
      [{ reservationId: "rsv_x", actualCost: "3" }, "actualCost", /actualCost: expected an integer ≥ 0/],
      [[], "", /body: expected a JSON object/],
    ];
    for (const [body, field, message] of cases) {
      const res = await post("/v1/settle", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_request", field });
      expect((res.body.error as { message: string }).message).toMatch(message);
    }
    const malformed = await post("/v1/settle", "{not json");
    expect(malformed).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    const badFlag = await post("/v1/check", { key: "k", operation: "GET /", reserve: "yes" });
    expect(badFlag).toEqual({ status: 400, body: { error: { code: "invalid_request", field: "reserve", message: "reserve: expected a boolean" } } });
  });

  it("authenticates as /v1/check: no or a wrong service token is 401; GET is 405", async () => {
    const none = await fetch(`${sluice.url}/v1/settle`, { method: "POST", body: JSON.stringify({ reservationId: "rsv_x", actualCost: 1 }) });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    expect((await post("/v1/settle", { reservationId: "rsv_x", actualCost: 1 }, "svc_wrong")).body).toMatchObject({ error: { code: "unauthorized" } });
    const get = await fetch(`${sluice.url}/v1/settle`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
  });
});

describe("SluiceClient.settle", () => {
  it("settles, replays, and answers unknown and conflict as values", async () => {
    const key = "sk_test_settle_a_0001";
    const before = await remaining(key);
    const answer = await client.check({ key, operation: "POST /v1/metered", cost: 4, reserve: true });
    expect(answer.allowed).toBe(true);
    const id = answer.reservationId!;
    expect(await client.settle(id, 1)).toEqual({ ok: true, reservationId: id, reservedCost: 4, actualCost: 1, refunded: 3, replayed: false });
    expect(await client.settle(id, 1)).toEqual({ ok: true, reservationId: id, reservedCost: 4, actualCost: 1, refunded: 3, replayed: true });
    expect(await remaining(key)).toBe(before - 1);
    expect(await client.settle(id, 2)).toMatchObject({ ok: false, reason: "conflict", error: expect.stringMatching(/actualCost 1/) as unknown });
    expect(await client.settle("rsv_nope", 2)).toMatchObject({ ok: false, reason: "unknown" });
  });

  it("an unreachable decision API is `unavailable`, never a throw", async () => {
    const down = new SluiceClient({ url: "http://127.0.0.1:9", token: "t", timeoutMs: 200 });
    expect(await down.settle("rsv_x", 1)).toMatchObject({ ok: false, reason: "unavailable" });
  });
});
