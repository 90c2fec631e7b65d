import { parseCheckBody } from "../lib/decision/request";
const body = { key: "bk_abc_bench", operation: "GET /v1/orders/42" };
for (let round = 0; round < 3; round++) {
  const t = performance.now();
  for (let i = 0; i < 200_000; i++) parseCheckBody({ ...body });
  console.log("parseCheckBody µs/call", (((performance.now() - t) * 1000) / 200_000).toFixed(3));
}
