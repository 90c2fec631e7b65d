/**
 * The lean ceiling of `npm run bench` (#12's table): node:http + ioredis, one EVALSHA per
 * event-loop turn carrying every pending sliding-window check, a JSON answer with the IETF
 * RateLimit headers. What a careful hand-written limiter on the same stack costs, with nothing
 * Sluice's contract adds (no policy, tenants, usage, metrics, budget, failure modes): a fair
 * ceiling, not a strawman — it coalesces like Sluice does and checks a real sliding window.
 * `PORT=… REDIS_URL=… LIMIT=… WINDOW_MS=… tsx bench/lean.ts`; body `{ "ip": "…" }`.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import { Redis } from "ioredis";

const port = Number(process.env.PORT ?? 8792);
const limit = Number(process.env.LIMIT ?? 1_000_000_000);
const windowMs = Number(process.env.WINDOW_MS ?? 60_000);
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { enableAutoPipelining: false });

// Sliding-window counter: the previous window weighted by the part of it still inside the window,
// plus the current one. KEYS: one per check; ARGV: limit, window. Returns remaining (or -1: denied)
// per key.
const LUA = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local L, w = tonumber(ARGV[1]), tonumber(ARGV[2])
local cur = math.floor(now / w)
local weight = 1 - (now - cur * w) / w
local out = {}
for i = 1, #KEYS do
  local ck = KEYS[i] .. ':' .. cur
  local c = tonumber(redis.call('GET', ck) or '0')
  local p = tonumber(redis.call('GET', KEYS[i] .. ':' .. (cur - 1)) or '0')
  local used = p * weight + c
  if used + 1 <= L then
    redis.call('INCR', ck)
    if c == 0 then redis.call('PEXPIRE', ck, 2 * w) end
    out[i] = math.floor(L - used - 1)
  else
    out[i] = -1
  end
end
return out`;
const SHA = createHash("sha1").update(LUA).digest("hex");
const windowSeconds = Math.ceil(windowMs / 1000);
const policyHeader = `"ip";q=${limit};w=${windowSeconds}`;

interface Pending {
  key: string;
  res: http.ServerResponse;
}
let queue: Pending[] = [];

function flush(): void {
  const batch = queue;
  queue = [];
  const keys = batch.map((p) => p.key);
  const run = () => redis.evalsha(SHA, keys.length, ...keys, String(limit), String(windowMs)) as Promise<number[]>;
  run()
    .catch((error: unknown) => {
      if (String(error).includes("NOSCRIPT")) return redis.eval(LUA, keys.length, ...keys, String(limit), String(windowMs)) as Promise<number[]>;
      throw error;
    })
    .then(
      (remaining) => batch.forEach((p, i) => answer(p.res, remaining[i]!)),
      () => batch.forEach((p) => answer(p.res, 0)),
    );
}

function answer(res: http.ServerResponse, remaining: number): void {
  const allowed = remaining >= 0;
  const r = allowed ? remaining : 0;
  const body = allowed ? `{"allowed":true,"remaining":${r}}` : `{"allowed":false,"remaining":0,"retryAfterSeconds":${windowSeconds}}`;
  const headers = ["Content-Type", "application/json", "Content-Length", String(body.length), "RateLimit-Policy", policyHeader, "RateLimit", `"ip";r=${r};t=${windowSeconds}`];
  if (!allowed) headers.push("Retry-After", String(windowSeconds));
  res.writeHead(200, headers);
  res.end(body);
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    let ip: unknown;
    try {
      ip = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { ip?: unknown }).ip;
    } catch {
      ip = undefined;
    }
    if (typeof ip !== "string") {
      res.writeHead(400, { "Content-Type": "application/json" });
      res.end('{"error":"ip"}');
      return;
    }
    if (queue.length === 0) setImmediate(flush);
    queue.push({ key: `lean:{${ip}}`, res });
  });
});
server.keepAliveTimeout = 5_000;
server.listen(port, "127.0.0.1", () => process.stdout.write(`lean listening on :${port}\n`));
process.once("SIGTERM", () => server.close(() => process.exit(0)));
