import type { Redis } from "ioredis";
import { beforeAll, describe, expect, it } from "vitest";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { readCurrentVersion } from "@/lib/redis/policy";
import { createApiToken } from "@/lib/services/access/create-api-token";
import { cutFreeKeyLimit, DEMO } from "@/lib/services/policy/testing/policy-rows";
import { POST as apply } from "../apply/route";
import { POST as publish } from "../publish/route";
import { GET as list } from "./route";
import { POST as approve } from "./[id]/approve/route";
import { POST as reject } from "./[id]/reject/route";
import { policyRequest as req, routeStoresPerFile } from "../../testing/routes";

const RULED = `${DEMO}\napproval:\n  beyondPercent: 20\n`;
const CUT = cutFreeKeyLimit(RULED);

const stores = routeStoresPerFile("aprapi");
let db: PrismaClient;
let redis: Redis;
const tokens: Record<string, string> = {};

const params = (id: string) => ({ params: Promise.resolve({ id }) });
const yaml = { "content-type": "application/yaml" };

beforeAll(async () => {
  ({ db, redis } = stores);
  for (const name of ["admin", "admin2", "product", "sre"]) {
    tokens[name] = (await createApiToken({ db }, { kind: "admin", role: name.replace(/\d$/, ""), name }, "test")).token;
  }
});

describe("the admin API under the approval rule", () => {
  it("answers 202 with the request, refuses the requesting admin token its own approval, and publishes on another's", async () => {
    expect((await apply(req("/apply", { token: tokens.admin, body: RULED, headers: yaml }))).status).toBe(200);
    expect((await publish(req("/publish", { token: tokens.admin }))).status).toBe(200);
    expect((await apply(req("/apply", { token: tokens.admin, body: CUT, headers: yaml }))).status).toBe(200);

    const asked = await publish(req("/publish", { token: tokens.admin, body: '{"note":"cut free"}' }));
    expect(asked.status).toBe(202);
    const pending = await asked.json();
    expect(pending).toMatchObject({ status: "approval_pending", version: 1, approval: { kind: "publish", state: "pending", note: "cut free" } });
    const id: string = pending.approval.id;
    expect(await readCurrentVersion(redis)).toBe(1);

    const listed = await list(req("/approvals?state=pending", { method: "GET", token: tokens.sre }));
    expect((await listed.json()).approvals.map((a: { id: string }) => a.id)).toEqual([id]);
    expect((await list(req("/approvals?state=waiting", { method: "GET", token: tokens.sre }))).status).toBe(400);

    // An admin token is no way around it: the same token may not approve its own request.
    const own = await approve(req(`/approvals/${id}/approve`, { token: tokens.admin }), params(id));
    expect(own.status).toBe(403);
    expect((await own.json()).error.message).toContain("cannot approve it: another user with publish rights must");
    // The sre role has no publish rights.
    expect((await approve(req(`/approvals/${id}/approve`, { token: tokens.sre }), params(id))).status).toBe(403);
    expect((await approve(req("/approvals/apr_nope/approve", { token: tokens.product }), params("apr_nope"))).status).toBe(404);
    expect(await db.policyVersion.count()).toBe(1);

    const ok = await approve(req(`/approvals/${id}/approve`, { token: tokens.product, body: '{"reason":"checked the replay"}' }), params(id));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ version: 2, approval: { id, state: "approved", decisionReason: "checked the replay" } });
    expect(await readCurrentVersion(redis)).toBe(2);
  });

  it("rejects with a reason (required), publishing nothing", async () => {
    await apply(req("/apply", { token: tokens.admin, body: RULED, headers: yaml }));
    const pending = await (await publish(req("/publish", { token: tokens.admin2 }))).json();
    expect(pending.status).toBe("approval_pending");
    const id: string = pending.approval.id;
    const noReason = await reject(req(`/approvals/${id}/reject`, { token: tokens.product, body: "{}" }), params(id));
    expect(noReason.status).toBe(400);
    expect((await noReason.json()).error.field).toBe("reason");
    const rejected = await reject(req(`/approvals/${id}/reject`, { token: tokens.product, body: '{"reason":"not this week"}' }), params(id));
    expect(rejected.status).toBe(200);
    expect((await rejected.json()).approval).toMatchObject({ state: "rejected", decisionReason: "not this week" });
    expect(await db.policyVersion.count()).toBe(2);
  });
});
