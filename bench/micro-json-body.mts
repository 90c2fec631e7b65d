// What refusing duplicate JSON keys (worker/decision/json-body.ts) costs per body, next to the bare
// JSON.parse it replaced: the usual /v1/check body (the colon count proves no duplicate), one with
// an IPv6 address (colons in strings: the scan runs), and a batch of 100. `npx tsx bench/micro-json-body.mts`.
import { parseJsonBody } from "../worker/decision/json-body";

const bodies: Record<string, Buffer> = {
  single: Buffer.from(JSON.stringify({ key: "sk_live_bench_0001_abcdef", operation: "GET /v1/orders", ip: "10.1.2.3" })),
  ipv6: Buffer.from(JSON.stringify({ key: "sk_live_bench_0001_abcdef", operation: "GET /v1/orders", ip: "2001:db8::7" })),
  batch100: Buffer.from(JSON.stringify({ requests: Array.from({ length: 100 }, (_, i) => ({ key: `sk_live_bench_${i}`, operation: "GET /v1/orders", ip: `10.0.0.${i}` })) })),
};
const bare = (b: Buffer) => JSON.parse(b.toString("utf8")) as unknown;
let sink = 0;
/** ns per call: the best of `rounds` timed loops (the machine is shared: the minimum is the steady figure). */
function best(fn: (b: Buffer) => unknown, body: Buffer, n: number): number {
  let min = Infinity;
  for (let round = 0; round < 9; round++) {
    const t = performance.now();
    for (let i = 0; i < n; i++) sink += fn(body) === undefined ? 1 : 0;
    min = Math.min(min, ((performance.now() - t) * 1e6) / n);
  }
  return min;
}
for (const [name, body] of Object.entries(bodies)) {
  const n = name === "batch100" ? 5_000 : 200_000;
  const bareNs = best(bare, body, n);
  const checkedNs = best(parseJsonBody, body, n);
  console.log(`${name.padEnd(8)} JSON.parse ${bareNs.toFixed(0).padStart(6)} ns   parseJsonBody ${checkedNs.toFixed(0).padStart(6)} ns   (+${(checkedNs - bareNs).toFixed(0)} ns)`);
}
if (sink === -1) console.log(sink);
