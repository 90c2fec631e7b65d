/**
 * SLUICE_DECISION_PROCESSES=2: a real `npm run decision` supervising two decision processes on one
 * port, against a redis-server of this file's own: /metrics totals are the decisions of both, a
 * killed process is restarted while requests keep being answered, SIGTERM drains both (a request
 * in flight is answered) and the supervisor exits 0.
 */
import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "../../lib/decision/testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../../lib/processes/harness";
import { type OwnRedis, startOwnRedis } from "../../lib/processes/redis-server";
import { sha256Hex } from "../../lib/redis/key-index";

const TOKEN = "svc_supervisor_test_0001";
const PREFIX = "sup:";
let own: OwnRedis;
let redis: Redis;

/** The processes whose parent is `pid` (the supervisor's decision processes). */
function childPids(pid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids.sort((a, b) => a - b);
}

/** CPU ticks (utime + stime) a process has used. */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until<T>(what: string, probe: () => T | undefined | false, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One check on a connection of its own (so the supervisor hands each to the next process in turn). */
function check(s: SpawnedServer, key: string = FIXTURE_KEYS.big): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ key, operation: "GET /v1/anything" });
    const req = http.request(`${s.url}/v1/check`, { method: "POST", agent: false, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function decisionsTotal(s: SpawnedServer): Promise<number> {
  const text = await fetch(`${s.url}/metrics`).then((r) => r.text());
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith("sluice_decisions_total{")) sum += Number(line.split(" ").pop());
  return sum;
}

const serverEnv = () => ({ REDIS_URL: own.url, SLUICE_REDIS_PREFIX: PREFIX, SLUICE_SERVICE_TOKENS: TOKEN, SLUICE_DECISION_PROCESSES: "2", SLUICE_GRPC_PORT: "0" });

beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = PREFIX;
  own = await startOwnRedis();
  redis = new Redis(own.url);
  await writeFixturePolicy(redis, compileFixture(), [sha256Hex(TOKEN)]);
}, 60_000);

afterAll(async () => {
  redis?.disconnect();
  await own?.stop();
});

describe("SLUICE_DECISION_PROCESSES=2 (a supervisor and two decision processes on one port)", () => {
  it("/metrics totals the decisions of both; a killed process is restarted while requests keep being answered", async () => {
    const s = await spawnDecisionServer(serverEnv(), { waitReady: true });
    try {
      const supervisor = s.child.pid!;
      const [first, second] = await until("two decision processes", () => {
        const pids = childPids(supervisor);
        return pids.length === 2 && (s.output().match(/ready/g) ?? []).length >= 2 && pids;
      });
      const before = await decisionsTotal(s);
      const ticksBefore = [cpuTicks(first!), cpuTicks(second!)];
      const statuses: number[] = [];
      for (let i = 0; i < 100; i++) statuses.push(await check(s));
      expect(statuses.filter((c) => c !== 200)).toEqual([]);
      // Both processes decided (the supervisor hands connections out in turn): each did a fair
      // share of the work, not the idle trickle of its timers…
      const used = [cpuTicks(first!) - ticksBefore[0]!, cpuTicks(second!) - ticksBefore[1]!];
      for (const ticks of used) expect(ticks / (used[0]! + used[1]!)).toBeGreaterThan(0.2);
      // …and /metrics, answered by one of them, counts the decisions of both.
      expect((await decisionsTotal(s)) - before).toBe(100);

      process.kill(first!, "SIGKILL");
      await until("the killed process gone", () => !alive(first!));
      // Answered by the other process meanwhile, then by both again.
      const during: number[] = [];
      for (let i = 0; i < 30; i++) during.push(await check(s));
      expect(during.filter((c) => c !== 200)).toEqual([]);
      const restarted = await until("a new decision process", () => {
        const pids = childPids(supervisor);
        return pids.length === 2 && !pids.includes(first!) && pids.includes(second!) && pids;
      });
      expect(restarted).toHaveLength(2);
      expect(s.output()).toMatch(/decision process \d exited \(SIGKILL\); restarting in \d+ ms/);
      await until("the new process ready", () => (s.output().match(/ready/g) ?? []).length >= 3);
      for (let i = 0; i < 10; i++) expect(await check(s)).toBe(200);
      // The dead process's counters went with it; the new one counts from zero, the aggregate stays exact for the living.
      const now = await decisionsTotal(s);
      for (let i = 0; i < 20; i++) await check(s);
      expect((await decisionsTotal(s)) - now).toBe(20);
    } finally {
      await s.stop("SIGKILL");
    }
  }, 90_000);

  it("SIGTERM drains both processes: a request in flight is answered, both exit, the supervisor exits 0", async () => {
    const s = await spawnDecisionServer({ ...serverEnv(), REDIS_TIMEOUT_MS: "1500" }, { waitReady: true });
    try {
      const supervisor = s.child.pid!;
      const pids = await until("two ready decision processes", () => {
        const p = childPids(supervisor);
        return p.length === 2 && (s.output().match(/ready/g) ?? []).length >= 2 && p;
      });
      expect(await check(s)).toBe(200);
      process.kill(own.pid()!, "SIGSTOP");
      let inFlight: Promise<number>;
      try {
        // A key no process has looked up yet: its lookup waits for the hung Redis (up to the 1.5 s budget).
        inFlight = check(s, FIXTURE_KEYS.acme);
        await new Promise((r) => setTimeout(r, 300));
        const exited = s.stop("SIGTERM");
        expect(await inFlight).toBe(200);
        process.kill(own.pid()!, "SIGCONT");
        expect(await exited).toBe(0);
      } finally {
        process.kill(own.pid()!, "SIGCONT");
      }
      for (const pid of pids) expect(alive(pid)).toBe(false);
      expect((s.output().match(/SIGTERM: draining/g) ?? []).length).toBeGreaterThanOrEqual(3);
    } finally {
      await s.stop("SIGKILL");
    }
  }, 90_000);
});
