/**
 * Every role × every field of the policy file, through `POST /api/v1/policy/apply` with an admin
 * token of that role: a file that changes just that field is applied (200) or refused (403, naming
 * the field, writing nothing). The expectation is written out here from the role table of
 * docs/control-plane.md, independently of lib/auth/permissions.ts: failure modes are admin's and sre's, API keys
 * need keys.manage (admin, product), everything else policy.edit (admin, product); applying at all
 * needs policy.edit, so sre and billing may only dry-run.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { exportPolicyObject } from "@/lib/services/policy/export-policy-file";
import { createApiToken } from "@/lib/services/access/create-api-token";
import { ROLES, type Role } from "@/lib/policy/types";
import { POST as apply } from "./apply/route";
import { routeStoresPerFile } from "../testing/routes";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../../../examples/demo-policy.yaml"), "utf8");

type File = ReturnType<typeof base>;
const base = () => parse(DEMO);
const op = (f: File, name: string) => f.operations.find((o: { name: string }) => o.name === name);
const tier = (f: File, name: string) => f.tiers.find((t: { name: string }) => t.name === name);
const tenant = (f: File, slug: string) => f.tenants.find((t: { slug: string }) => t.slug === slug);

/** One valid change per field of the file; `kind` is who may make it. */
const FIELDS: { field: string; kind: "failure mode" | "key" | "policy"; change: (f: File, role: Role) => void }[] = [
  { field: "defaults.failureMode", kind: "failure mode", change: (f) => void (f.defaults.failureMode = "closed") },
  { field: "operations[].failureMode (set)", kind: "failure mode", change: (f) => void (op(f, "orders-read").failureMode = "closed") },
  { field: "operations[].failureMode (changed)", kind: "failure mode", change: (f) => void (op(f, "export").failureMode = "open") },
  { field: "operations[].failureMode (cleared)", kind: "failure mode", change: (f) => void delete op(f, "search").failureMode },
  { field: "operations[] with a failureMode (created)", kind: "failure mode", change: (f) => void f.operations.push({ name: "reports", match: ["GET /v1/reports"], failureMode: "closed" }) },
  { field: "operations[] with a failureMode (deleted)", kind: "failure mode", change: (f) => {
    f.operations = f.operations.filter((o: { name: string }) => o.name !== "export");
    for (const t of f.tiers) {
      t.limits = t.limits.filter((l: { operation: string }) => l.operation !== "export");
      t.quotas = t.quotas.filter((q: { operation: string }) => q.operation !== "export");
    }
    f.globalCaps = [];
    tenant(f, "acme").overrides = [];
  } },
  { field: "operations[] (created)", kind: "policy", change: (f) => void f.operations.push({ name: "reports", match: ["GET /v1/reports"] }) },
  { field: "operations[].match", kind: "policy", change: (f) => void op(f, "catalog").match.push("GET /v1/brands") },
  { field: "operations[].cost", kind: "policy", change: (f) => void (op(f, "orders-write").cost = 3) },
  { field: "tiers[].weight", kind: "policy", change: (f) => void (tier(f, "pro").weight = 5) },
  { field: "tiers[] (created)", kind: "policy", change: (f) => void f.tiers.push({ name: "gold", weight: 8, limits: [] }) },
  { field: "tiers[].limits[].limit", kind: "policy", change: (f) => void (tier(f, "free").limits[0].limit = 101) },
  { field: "tiers[].limits[].window", kind: "policy", change: (f) => void (tier(f, "free").limits[0].window = "2m") },
  { field: "tiers[].limits[].scope", kind: "policy", change: (f) => void (tier(f, "free").limits[1].scope = "tenant") },
  { field: "tiers[].limits[].algorithm", kind: "policy", change: (f) => void (tier(f, "free").limits[1].algorithm = "sliding_window_counter") },
  { field: "tiers[].limits[].burst", kind: "policy", change: (f) => void (tier(f, "free").limits[2].burst = 2) },
  { field: "tiers[].limits[].precision", kind: "policy", change: (f) => void (tier(f, "pro").limits[0].precision = 10) },
  { field: "tiers[].limits[].mode", kind: "policy", change: (f) => void (tier(f, "free").limits[6].mode = "reject") },
  { field: "tiers[].limits[].maxDelay", kind: "policy", change: (f) => void (tier(f, "free").limits[4].maxDelay = "1s") },
  { field: "tiers[].limits[].leaseTtl", kind: "policy", change: (f) => void (tier(f, "free").limits[3].leaseTtl = "45s") },
  { field: "tiers[].quotas[].limit", kind: "policy", change: (f) => void (tier(f, "free").quotas[0].limit = 20000) },
  { field: "tiers[].quotas[].overage", kind: "policy", change: (f) => void (tier(f, "free").quotas[0].overage = "bill") },
  { field: "globalCaps[].limit", kind: "policy", change: (f) => void (f.globalCaps[0].limit = 60) },
  { field: "globalCaps[].share", kind: "policy", change: (f) => void (f.globalCaps[0].share = "none") },
  { field: "tenants[].name", kind: "policy", change: (f) => void (tenant(f, "acme").name = "Acme Inc") },
  { field: "tenants[].tier", kind: "policy", change: (f) => void (tenant(f, "wonka").tier = "pro") },
  { field: "tenants[].status", kind: "policy", change: (f) => void (tenant(f, "acme").status = "suspended") },
  { field: "tenants[] (created)", kind: "policy", change: (f) => void f.tenants.push({ slug: "newco", name: "NewCo", tier: "free" }) },
  { field: "tenants[].overrides[].limit", kind: "policy", change: (f) => void (tenant(f, "acme").overrides[0].limit = 150) },
  { field: "tenants[].overrides[].expiresAt", kind: "policy", change: (f) => void (tenant(f, "acme").overrides[0].expiresAt = "2028-01-01T00:00:00Z") },
  { field: "tenants[].overrides[] (created)", kind: "policy", change: (f) => void (tenant(f, "stark").overrides ??= []).push({ operation: "search", scope: "api_key", limit: 99 }) },
  { field: "tenants[].keys[] (created)", kind: "key", change: (f, role) => void tenant(f, "stark").keys.push({ name: `extra-${role}`, key: `sk_test_stark_extra_${role}_1` }) },
  { field: "tenants[].keys[].key (rotated)", kind: "key", change: (f) => void (tenant(f, "stark").keys[0].key = "sk_test_stark_ci_0002") },
];

/** Who may make each kind of change through the API (apply itself needs policy.edit). */
const MAY: Record<Role, readonly (typeof FIELDS)[number]["kind"][]> = {
  admin: ["failure mode", "key", "policy"],
  product: ["key", "policy"],
  sre: [],
  billing: [],
};

const stores = routeStoresPerFile("roles");
let db: PrismaClient;
const tokens = {} as Record<Role, string>;

const post = (role: Role, file: File) =>
  apply(new Request("http://localhost:3000/api/v1/policy/apply", {
    method: "POST",
    headers: { authorization: `Bearer ${tokens[role]}`, "content-type": "application/json" },
    body: JSON.stringify(file),
  }));

beforeAll(async () => {
  ({ db } = stores);
  for (const role of ROLES) tokens[role] = (await createApiToken({ db }, { kind: "admin", role, name: role }, "test")).token;
  expect((await post("admin", base())).status).toBe(200);
});

describe("policy file apply: every role × every field", () => {
  for (const { field, kind, change } of FIELDS) {
    it(`${field}: ${ROLES.filter((r) => MAY[r].includes(kind)).join(" and ")} may change it, the others get 403 and nothing changes`, async () => {
      const before = JSON.stringify(await exportPolicyObject(db));
      for (const role of ROLES) {
        const changed = base();
        change(changed, role);
        const res = await post(role, changed);
        const body = await res.json();
        if (MAY[role].includes(kind)) {
          expect(res.status, `${role}: ${JSON.stringify(body)}`).toBe(200);
          expect(body.applied, role).toBe(true);
          // Back to the base file (a created key stays: files never delete keys; removed below).
          expect((await post("admin", base())).status).toBe(200);
        } else {
          expect(res.status, `${role}: ${JSON.stringify(body)}`).toBe(403);
          expect(body.error.code).toBe("forbidden");
          // A role that may apply files is refused the field itself, by its path.
          if (role === "product") expect(body.error.field).toMatch(/failureMode$/);
        }
      }
      await db.apiKey.deleteMany({ where: { name: { startsWith: "extra-" } } });
      expect(JSON.stringify(await exportPolicyObject(db))).toBe(before);
    });
  }
});
