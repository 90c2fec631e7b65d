/**
 * The paths deploy/kubernetes and the image's health check ask the decision server, asked of a
 * real one: each answers 200 once a policy is loaded (deploy/deploy.test.ts checks the rest of the
 * files without a server).
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "@/test/helpers";
import { spawnDecisionServer, type SpawnedServer } from "@/lib/processes/harness";
import { compileFixture, writeFixturePolicy } from "@/lib/decision/testing/fixture";
import { probeUrl } from "@/worker/healthcheck";
import { loadManifests } from "./testing/files";

let redis: Redis;
let server: SpawnedServer;

beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = `${testRedisPrefix()}probe${randomBytes(3).toString("hex")}:`;
  redis = new Redis(testRedisUrl());
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: process.env.SLUICE_REDIS_PREFIX, POLICY_POLL_MS: "200" });
  await writeFixturePolicy(redis, compileFixture());
});

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

describe("the decision server's probes", () => {
  it("every path the manifests and the image's health check ask answers 200 once a policy is loaded", async () => {
    const paths = new Set<string>();
    for (const o of loadManifests()) {
      for (const c of o.spec?.template?.spec.containers ?? []) {
        if (c.args?.[0] !== "start:decision") continue;
        for (const probe of [c.readinessProbe, c.livenessProbe]) if (probe) paths.add(probe.httpGet.path);
      }
    }
    const health = probeUrl(["node", "dist/server/decision-server.js"], { decisionPort: server.port, decisionHost: "127.0.0.1", controlPlanePort: 3000 });
    paths.add(new URL(health!).pathname);
    expect([...paths].sort()).toEqual(["/healthz", "/readyz"]);
    for (const path of paths) {
      let status = 0;
      for (const deadline = Date.now() + 10_000; status !== 200 && Date.now() < deadline; ) {
        status = (await fetch(`${server.url}${path}`)).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 50));
      }
      expect(status, path).toBe(200);
    }
  });
});
