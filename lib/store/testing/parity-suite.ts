/**
 * The parity test every algorithm file has a twin of (`<algorithm>.int.test.ts`): fixed scenarios
 * and fast-check random ones through the pure function and its Lua twin, answers compared.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../../test/helpers";
import { expectParity, fixedScenarios, realTimeScenarioArbitrary, scenarioArbitrary, type ParityAlgorithm } from "./parity";

export function paritySuite(algorithm: ParityAlgorithm, numRuns = 60): void {
  describe(`${algorithm}: the Lua twin answers exactly like the pure function`, () => {
    let redis: Redis;
    const prefix = `${testRedisPrefix()}par:`;
    beforeAll(() => {
      redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
    });
    afterAll(() => redis.disconnect());

    it("on fixed scenarios (bursts, window edges, month ends, idle, time jumps)", async () => {
      for (const scenario of fixedScenarios(algorithm)) await expectParity(redis, prefix, scenario);
    });

    it("on random sequences (fast-check: costs, window edges, time jumps, subjects, dry runs)", async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArbitrary(algorithm), (scenario) => expectParity(redis, prefix, scenario)),
        { numRuns },
      );
    });

    // The production branch (Redis TIME, exact expiries, ttlPad = 0): keys really expire and
    // sub-windows really slide out, and the answers must still be the pure function's.
    it("on Redis server time, as in production (exact expiries; real time between steps)", async () => {
      await fc.assert(
        fc.asyncProperty(realTimeScenarioArbitrary(algorithm), (scenario) => expectParity(redis, prefix, scenario, { clock: "redis" })),
        { numRuns: 12 },
      );
    });
  });
}
