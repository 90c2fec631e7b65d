/**
 * The Node.js flags every decision process runs with: `npm run decision` and `npm run
 * start:decision` (package.json, kept equal to this by lib/decision/process-flags.test.ts), the supervisor's processes
 * (worker/decision/supervisor.ts), the demo, and the servers the tests and benchmarks start.
 *
 * `--max-semi-space-size=64` (MB; V8's default is 16): a decision keeps its request, its pending
 * store call, its outcomes and its answer alive across the Redis round trip, and a batch of 100
 * keeps a hundred of each. With the default young generation these survive a scavenge and are
 * copied — 22% of the batch path's CPU was the scavenger — where a larger one lets them die young.
 * Measured on one process (docs/benchmarks.md): 16 → 32 MB took the batch from 9.0 to 6.5 µs of
 * server CPU per decision, the single check 22.5 → 21.4, four counters 31.6 → 28.1; 32 → 64 MB
 * the batch again by 12–15 % (5.8–6.8 → 5.0–5.6 µs in pairs of runs), the others unchanged. The
 * price is memory under load: a process under the batch load held 225–235 MB resident at 32 and
 * 255–275 MB at 64 (the young generation grows to its bound only when allocation asks for it).
 */
export const DECISION_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=64"];

/** `execArgv` with every decision flag it does not already set (one it sets is kept: the operator's choice). */
export function withDecisionFlags(execArgv: readonly string[]): string[] {
  const out = [...execArgv];
  for (const flag of DECISION_NODE_FLAGS) {
    const name = flag.split("=")[0]!;
    if (!out.some((a) => a === name || a.startsWith(`${name}=`))) out.push(flag);
  }
  return out;
}
