/**
 * The Node.js flags every decision process runs with: `npm run decision` (package.json, kept equal
 * to this by lib/decision/process-flags.test.ts), the supervisor's processes
 * (worker/decision/supervisor.ts), the demo, and the servers the tests and benchmarks start.
 *
 * `--max-semi-space-size=32` (MB; V8's default is 16): a decision keeps its request, its pending
 * store call, its outcomes and its answer alive across the Redis round trip, and a batch of 100
 * keeps a hundred of each. With the default young generation these survive a scavenge and are
 * copied — 22% of the batch path's CPU was the scavenger — where a larger one lets them die young.
 * Measured on one process (README "Benchmarks"): batch 9.0 → 6.5 µs of server CPU per decision,
 * single check 22.5 → 21.4, four counters 31.6 → 28.1; it costs 32 MB more heap per process.
 */
export const DECISION_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=32"];

/** `execArgv` with every decision flag it does not already set (one it sets is kept: the operator's choice). */
export function withDecisionFlags(execArgv: readonly string[]): string[] {
  const out = [...execArgv];
  for (const flag of DECISION_NODE_FLAGS) {
    const name = flag.split("=")[0]!;
    if (!out.some((a) => a === name || a.startsWith(`${name}=`))) out.push(flag);
  }
  return out;
}
