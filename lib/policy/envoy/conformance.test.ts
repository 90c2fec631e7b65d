/**
 * envoyproxy/ratelimit's behaviour, case by case (./testing/cases.ts), through the path a user
 * takes: their config files → `sluice import envoy` (lib/services/policy/import-envoy.ts) → the policy
 * file's parse (bounds included) → compile → the decision on in-memory counters at the case's time.
 * A gRPC backend runs the same cases against a real decision server.
 */
import { describe, expect, it } from "vitest";
import { compilePolicy } from "../compile";
import { importEnvoyConfigs } from "../../services/policy/import-envoy";
import { parsePolicyInput } from "../../services/policy/policy-input";
import type { CompiledEnvoyService } from "./compiled";
import { decideEnvoy, EnvoyMemoryCounters } from "./memory";
import { ENVOY_CASES, ENVOY_REFUSALS } from "./testing/cases";
import { CASE_START_MS, runSteps, type EnvoyBackend } from "./testing/conformance";

function memoryBackend(): EnvoyBackend {
  let service: CompiledEnvoyService | undefined;
  const counters = new EnvoyMemoryCounters();
  return {
    async load(policyText) {
      const parsed = parsePolicyInput(policyText);
      if (!parsed.ok) throw new Error(`the imported policy does not parse: ${JSON.stringify(parsed.issues)}`);
      service = compilePolicy({ ...parsed.value, tenants: [] }).rateLimitService;
    },
    async shouldRateLimit(request, atMs) {
      const d = decideEnvoy(service, request, counters, CASE_START_MS + atMs);
      return d.ok ? { response: d.response } : { error: d.error.message };
    },
  };
}

describe("answers as envoyproxy/ratelimit gives them, config imported unchanged", () => {
  for (const c of ENVOY_CASES) {
    it(`${c.name} (${c.source})`, async () => {
      const imported = importEnvoyConfigs(c.configs, { mergeDomains: c.mergeDomains });
      if (!imported.ok) throw new Error(`import refused: ${JSON.stringify(imported.issues)}`);
      const backend = memoryBackend();
      await backend.load(imported.text);
      let steps = 0;
      for await (const r of runSteps(c, backend)) {
        expect(r.got, r.label).toEqual(r.want);
        steps++;
      }
      expect(steps).toBe(c.steps.length);
    });
  }
});

describe("configs envoyproxy/ratelimit refuses are refused by the import, naming file and path", () => {
  for (const c of ENVOY_REFUSALS) {
    it(`${c.name} (${c.source})`, () => {
      const imported = importEnvoyConfigs(c.configs, { mergeDomains: c.mergeDomains });
      expect(imported.ok).toBe(false);
      const issues = imported.ok ? [] : imported.issues;
      expect(issues, JSON.stringify(issues)).toContainEqual(expect.objectContaining({ file: c.refused.file, path: c.refused.path, message: expect.stringMatching(c.refused.message) }));
    });
  }
});
