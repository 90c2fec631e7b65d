/**
 * The Node.js flags every decision process runs with: package.json's decision scripts (kept equal
 * by process-flags.test.ts), the supervisor's processes, the demo, and the servers tests start.
 *
 * `--max-semi-space-size=64` (MB; V8's default is 16): a decision's objects live across the Redis
 * round trip, and the default young generation copied them in scavenges (22% of the batch path's
 * CPU). It took the batch from 9.0 to 5.0–5.6 µs of server CPU per decision, for 30–40 MB more
 * resident under load (docs/benchmarks.md).
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
