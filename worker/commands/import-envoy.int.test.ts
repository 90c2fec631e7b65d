/**
 * `sluice import envoy` as an operator runs it, on their runtime layout, piped into `sluice apply`
 * and `sluice publish` against real PostgreSQL and Redis.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freshDatabasePerFile, testRedisPrefix, testRedisUrl } from "@/test/helpers";
import { runSluice } from "../testing/sluice-cli";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DEMO = path.join(ROOT, "examples/demo-policy.yaml");

const fresh = freshDatabasePerFile();
let dir: string;
const sluice = (...args: string[]) => runSluice({ DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: `${testRedisPrefix()}import:` }, args);

/** Their integration test's layout: RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config/*.yaml, and a file outside config/ they do not load. */
function runtimeLayout(): string {
  const sub = path.join(dir, "runtime", "current", "ratelimit");
  mkdirSync(path.join(sub, "config"), { recursive: true });
  writeFileSync(path.join(sub, "reload.yaml"), "domain: reload\n");
  writeFileSync(path.join(sub, "config", "basic.yaml"), "domain: basic\ndescriptors:\n  - key: key1\n    rate_limit:\n      unit: second\n      requests_per_unit: 50\n");
  writeFileSync(path.join(sub, "config", "another.yaml"), "domain: another\ndescriptors:\n  - key: key2\n    rate_limit:\n      unit: minute\n      requests_per_unit: 20\n");
  return sub;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "sluice-import-envoy-"));
});

describe("sluice import envoy", () => {
  it("imports their runtime directory into an export, and apply and publish take the result", async () => {
    expect((await sluice("apply", "-f", DEMO)).code).toBe(0);
    const exported = await sluice("export");
    const policyPath = path.join(dir, "policy.yaml");
    writeFileSync(policyPath, exported.stdout);

    const imported = await sluice("import", "envoy", runtimeLayout(), "--into", policyPath);
    expect(imported.stderr).toContain("Imported 2 domain(s) from 2 file(s): another, basic.");
    expect(imported.code).toBe(0);
    const file = parse(imported.stdout);
    expect(file.rateLimitService.domains.map((d: { domain: string }) => d.domain)).toEqual(["another", "basic"]);
    expect(file.tiers.length).toBe(parse(readFileSync(DEMO, "utf8")).tiers.length);

    const out = path.join(dir, "with-envoy.yaml");
    writeFileSync(out, imported.stdout);
    const applied = await sluice("apply", "-f", out);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain("+ envoyDomain another");
    expect(applied.stdout).toContain("+ envoyDomain basic");
    expect(applied.stdout).toMatch(/2 to create, 0 to change, 0 to delete/);
    const published = await sluice("publish");
    expect(published.code).toBe(0);
    expect(await fresh.db.policyVersion.count()).toBe(1);
    expect(parse((await sluice("export")).stdout).rateLimitService.domains).toEqual(file.rateLimitService.domains);
  }, 300_000);

  it("exits 1 naming file, line and path, and prints nothing on stdout", async () => {
    const bad = path.join(dir, "bad.yaml");
    writeFileSync(bad, "domain: x\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: day\n");
    const r = await sluice("import", "envoy", bad);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`error: ${bad}:6: descriptors[0].rate_limit.unit: not allowed with unlimited: true`);
    const missing = await sluice("import", "envoy", path.join(dir, "nowhere"));
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining("no such file or directory") });
  }, 150_000);
});
