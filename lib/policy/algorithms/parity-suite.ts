/**
 * The parity test every algorithm file has a twin of (`<algorithm>.int.test.ts`): fixed scenarios
 * and fast-check random ones through the pure function and its Lua twin, answers compared.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../../test/helpers";
import { expectParity, fixedScenarios, scenarioArbitrary, type ParityAlgorithm } from "../../store/parity";

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
  });
}
