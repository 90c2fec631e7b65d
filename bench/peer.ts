/**
 * The peer baseline for the benchmark: rate-limiter-flexible 11 (RateLimiterRedis over ioredis)
 * behind node:http, answering a check body `{ key, cost }` the way a hand-rolled limiter would.
 * rate-limiter-flexible has no sliding window: its Redis limiter (one atomic script per call,
 * fixed window) is the closest equivalent of Sluice's single sliding-window check.
 * `PORT=… REDIS_URL=… LIMIT=… tsx bench/peer.ts`.
 */
import http from "node:http";
import { Redis } from "ioredis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";

const port = Number(process.env.PORT ?? 8791);
// Auto-pipelining on by default (AUTOPIPELINE=0 turns it off): measured both ways, it is the
// faster setting for this peer (see the docs/benchmarks.md).
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { enableAutoPipelining: process.env.AUTOPIPELINE !== "0" });
const limiter = new RateLimiterRedis({
  storeClient: redis,
  keyPrefix: "peer",
  points: Number(process.env.LIMIT ?? 1_000_000_000),
  duration: 60,
  useRedisPackage: false,
});

function send(res: http.ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(value);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    let key = "";
    let cost = 1;
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { key?: unknown; ip?: unknown; cost?: unknown };
      // Per client address when the body names one (bench/side-by-side.ts), as the others count.
      key = typeof body.ip === "string" ? body.ip : typeof body.key === "string" ? body.key : "";
      cost = typeof body.cost === "number" ? body.cost : 1;
    } catch {
      return send(res, 400, { error: "bad json" });
    }
    limiter.consume(key, cost).then(
      (r: RateLimiterRes) =>
        send(res, 200, { allowed: true, remaining: r.remainingPoints }, { "RateLimit-Remaining": String(r.remainingPoints) }),
      (r: unknown) => {
        if (r instanceof RateLimiterRes) {
          const retry = String(Math.ceil(r.msBeforeNext / 1000));
          return send(res, 200, { allowed: false, status: 429, retryAfterSeconds: Number(retry) }, { "Retry-After": retry });
        }
        send(res, 200, { allowed: true, degraded: true });
      },
    );
  });
});
server.keepAliveTimeout = 5_000;
server.listen(port, "127.0.0.1", () => process.stdout.write(`peer listening on :${port}\n`));
process.once("SIGTERM", () => server.close(() => process.exit(0)));
