/**
 * The queue example (examples/queue/export-worker.ts) against the real RabbitMQ on 127.0.0.1:5672
 * and a real decision server running its policy (examples/queue/export-policy.yaml): a tenant
 * alone exports at its tier's shaped rate; two tenants with backlogs share the global capacity by
 * tier weight; a tenant's long backlog does not hold up another tenant's few jobs.
 */
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import amqp from "amqplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { declareExportQueues, type ExportJob, publishExport, startExportWorker } from "../../examples/queue/export-worker";
import type { PolicyFileInput } from "../policy/policy-file";
import { SluiceClient } from "./client";
import { type ClientTestServer, startDecisionServerWith } from "./testing/decision";

const AMQP_URL = "amqp://guest:guest@127.0.0.1:5672";
let sluice: ClientTestServer;
let client: SluiceClient;
let connection: amqp.ChannelModel;
let channel: amqp.Channel;
const prefixes: string[] = [];

beforeAll(async () => {
  const policy = parseYaml(await readFile(path.resolve(import.meta.dirname, "../../examples/queue/export-policy.yaml"), "utf8")) as PolicyFileInput;
  sluice = await startDecisionServerWith(policy);
  client = new SluiceClient({ url: sluice.url, token: sluice.token, timeoutMs: 2_000, onError: "closed" });
  connection = await amqp.connect(AMQP_URL);
  channel = await connection.createChannel();
});

afterAll(async () => {
  for (const prefix of prefixes) {
    for (const tenant of ["acme", "globex"]) await channel.deleteQueue(`${prefix}.${tenant}`).catch(() => undefined);
    await channel.deleteExchange(prefix).catch(() => undefined);
  }
  await connection?.close().catch(() => undefined);
  await sluice?.stop();
});

interface Done {
  job: ExportJob;
  atMs: number;
}

/** Queues of their own on the shared broker, with `jobs` published before the worker starts. */
async function runWorker(jobs: Record<string, number>) {
  const prefix = `sluice-test-${randomBytes(4).toString("hex")}`;
  prefixes.push(prefix);
  const tenants = ["acme", "globex"];
  await declareExportQueues(channel, tenants, prefix);
  const publish = (tenant: string, n: number) => {
    for (let i = 0; i < n; i++) publishExport(channel, { id: `${tenant}-${i}-${randomBytes(2).toString("hex")}`, tenant }, prefix);
  };
  for (const [tenant, n] of Object.entries(jobs)) publish(tenant, n);
  const done: Done[] = [];
  const startedMs = Date.now();
  const worker = await startExportWorker({ connection, client, tenants, prefix, run: async (job) => void done.push({ job, atMs: Date.now() }) });
  const of = (tenant: string) => done.filter((d) => d.job.tenant === tenant);
  return { done, of, publish, startedMs, stop: () => worker.stop() };
}

const until = async (condition: () => boolean, ms: number) => {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
};

describe("the RabbitMQ export worker paced by Sluice", () => {
  it("alone, a free tenant exports at its tier's shaped rate (4 per second), waiting instead of failing", async () => {
    const run = await runWorker({ acme: 12 });
    await until(() => run.done.length === 12, 10_000);
    await run.stop();
    const times = run.of("acme").map((d) => d.atMs);
    expect(times).toHaveLength(12);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    const sorted = [...gaps].sort((a, b) => a - b);
    // 250 ms apart (the leaky bucket drains 4 per second; the worker waits each delayMs).
    expect(sorted[Math.floor(sorted.length / 2)]).toBeGreaterThanOrEqual(200);
    expect(sorted[Math.floor(sorted.length / 2)]).toBeLessThan(400);
    // 11 gaps of 250 ms, less the first job's slower round trip (a cold connection): nowhere near
    // the 1.1 s the global cap alone would allow, nor an unpaced burst.
    expect(times[11]! - times[0]!).toBeGreaterThanOrEqual(11 * 250 - 250);
  });

  it("two tenants with backlogs share the export capacity by tier weight (free 1 : pro 4)", async () => {
    // Let the previous test's activity on the global cap age out (it is remembered one window).
    await new Promise((r) => setTimeout(r, 2_100));
    const run = await runWorker({ acme: 60, globex: 60 });
    // Count whole seconds of contention, after the first (in which both tenants become active).
    const firstWindow = Math.ceil((run.startedMs + 1_000) / 1_000) * 1_000;
    const lastWindow = firstWindow + 3_000;
    await until(() => Date.now() >= lastWindow + 300, 10_000);
    await run.stop();
    const inWindows = (tenant: string) => run.of(tenant).filter((d) => d.atMs >= firstWindow && d.atMs < lastWindow).length;
    const free = inWindows("acme");
    const pro = inWindows("globex");
    // 10 per second split 2 : 8, over 3 seconds: 6 and 24 (give or take a job at each window edge).
    // pro's floor is 15, not 18: a loaded CI int stage (two files spawning decision servers beside
    // this one) once slowed the worker's own round trips to 17 in 3 s; the split is the ratio below.
    expect(free).toBeGreaterThanOrEqual(4);
    expect(free).toBeLessThanOrEqual(8);
    expect(pro).toBeGreaterThanOrEqual(15);
    expect(pro).toBeLessThanOrEqual(28);
    expect(free + pro).toBeLessThanOrEqual(10 * 3 + 2);
    expect(pro / free).toBeGreaterThan(2.5);
    expect(pro / free).toBeLessThan(6);
  });

  it("a pro tenant's backlog of 150 does not hold up a free tenant's three jobs", async () => {
    await new Promise((r) => setTimeout(r, 2_100));
    const run = await runWorker({ globex: 150 });
    await until(() => run.of("globex").length >= 5, 5_000);
    const publishedMs = Date.now();
    run.publish("acme", 3);
    await until(() => run.of("acme").length === 3, 10_000);
    const tookMs = Date.now() - publishedMs;
    const proDone = run.of("globex").length;
    await run.stop();
    expect(run.of("acme")).toHaveLength(3);
    // Its share is 2 of every second's 10: the third job is done within about two seconds.
    expect(tookMs).toBeLessThan(3_000);
    expect(proDone).toBeLessThan(100);
  });
});
