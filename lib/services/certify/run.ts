/**
 * `sluice certify`: runs the acceptance scenarios of a published version against decision
 * servers and attaches the report to the version (docs/proving.md).
 *
 * Ephemeral (the default): a redis-server of its own, `instances` decision servers on it (the
 * product's own `worker/decision-server.ts`, with the operator's settings, the accuracy meter
 * sampling every subject), serving the certification document of the plan (lib/services/certify/
 * plan.ts). Then, in order, each phase running every cell at once: boundary; N instances; window
 * edge; 0.5× and 1.6× sustained load; Retry-After; reject-path p95 per operation; and last, Redis
 * killed, the failure mode of every operation. Bounded: past the deadline, what is left is
 * reported not verified.
 *
 * Against a target (`--target URL`, a staging decision server serving the version): no
 * certification tenants exist there and its windows are real, so only what needs neither is run —
 * that it serves the version — and everything else is reported not verified; the exit code then
 * says so.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { PrismaClient } from "../../generated/prisma/client";
import type { Prisma } from "../../generated/prisma/client";
import { spawnDecisionServer, type SpawnedServer } from "../../processes/harness";
import { saveCertificationReport } from "../../db/certify-repo";
import { startOwnRedis, type OwnRedis } from "../../processes/redis-server";
import { createRedisClient } from "../../redis/client";
import { sha256Hex } from "../../redis/key-index";
import { writePublishedPolicy } from "../../redis/policy";
import { ANY_OPERATION } from "../../policy/types";
import { ServiceError } from "../errors";
import { readPublishedVersion } from "../policy/published-version";
import type { ProbeResult } from "../justify/limit-probe";
import { planCertification, type Cell, type CertificationPlan } from "./plan";
import { formatReportHtml, type CertificationReport, type RequirementResult } from "./report";
import { checkDry, checkOne, type Endpoint } from "./decision-client";
import { boundary, edge, failureDrill, instances as instancesScenario, overLimit, rejectP95, retryAfter, underLimit } from "./scenarios";

export const DEFAULT_CERTIFY_INSTANCES = 2;
export const DEFAULT_CERTIFY_SECONDS = 120;

export interface CertifyOptions {
  version?: number;
  /** A decision server to certify instead of ephemeral ones. */
  target?: string | null;
  /** The target's service token (SLUICE_SERVICE_TOKEN). */
  targetToken?: string | null;
  instances?: number;
  maxSeconds?: number;
  /** Progress lines for the terminal. */
  progress?: (line: string) => void;
}

export interface CertifyOutcome {
  id: string;
  report: CertificationReport;
}

export async function certifyVersion(db: PrismaClient, options: CertifyOptions): Promise<CertifyOutcome> {
  const startedMs = Date.now();
  const deadlineMs = startedMs + (options.maxSeconds ?? DEFAULT_CERTIFY_SECONDS) * 1000;
  const progress = options.progress ?? (() => undefined);
  const instanceCount = options.instances ?? DEFAULT_CERTIFY_INSTANCES;
  if (!Number.isInteger(instanceCount) || instanceCount < 1 || instanceCount > 8) {
    throw new ServiceError("invalid_request", "instances: expected a whole number from 1 to 8", { field: "instances" });
  }
  const source = await readPublishedVersion(db, options.version);
  const plan = planCertification(source, () => `sk_cert_${randomBytes(12).toString("hex")}`);
  const log = (line: string) => progress(`[certify ${((Date.now() - startedMs) / 1000).toFixed(0).padStart(3)} s] ${line}`);
  log(`policy v${source.version}: ${plan.cells.length} limits, quotas and caps, ${plan.operations.length} operations`);

  const results: RequirementResult[] = [];
  const notes: string[] = [];
  let mode: CertificationReport["mode"] = "ephemeral";
  if (options.target) {
    mode = "target";
    if (!options.targetToken) throw new ServiceError("invalid_request", "--target needs a service token in SLUICE_SERVICE_TOKEN", { field: "target" });
    results.push(...(await againstTarget({ url: options.target.replace(/\/$/, ""), token: options.targetToken }, source.version, plan, log)));
    notes.push("Against a target only what needs no certification tenants and no time-compressed windows is run: run without --target for the full certification.");
  } else {
    results.push(...(await ephemeral(plan, instanceCount, deadlineMs, log)));
  }
  const report: CertificationReport = {
    version: source.version,
    checksum: source.checksum,
    mode,
    target: options.target ?? null,
    instances: mode === "target" ? 1 : instanceCount,
    startedAt: new Date(startedMs).toISOString(),
    durationMs: Date.now() - startedMs,
    passed: results.length > 0 && results.every((r) => r.status === "pass"),
    results,
    scaled: plan.cells.filter((c) => c.scaled).map((c) => ({ subject: c.label, ...c.scaled! })),
    notes: [
      ...notes,
      `Windows above 2s and limits above 50 are certified time-compressed (the same algorithm and integer arithmetic at a smaller scale); see the list. Run on ${hostname()}.`,
    ],
  };
  const id = await saveCertificationReport(db, {
    version: report.version,
    passed: report.passed,
    mode: report.mode,
    target: report.target,
    instances: report.instances,
    report: report as unknown as Prisma.InputJsonValue,
    html: formatReportHtml(report),
    createdAt: new Date(startedMs),
  });
  log(`report ${id} saved with v${report.version}`);
  return { id, report };
}

const notVerified = (requirement: RequirementResult["requirement"], subject: string, why: string): RequirementResult => ({
  requirement,
  subject,
  source: "—",
  expected: "—",
  measured: why,
  status: "not_verified",
});

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
  return cause ? `${error.message} (${cause.code ?? cause.message ?? "unknown cause"})` : error.message;
}

/** Runs `run` for every item at once, each result or a not-verified one naming its error. */
async function phase<T>(
  name: string,
  items: readonly T[],
  deadlineMs: number,
  log: (l: string) => void,
  run: (item: T) => Promise<RequirementResult>,
  fallback: (item: T, why: string) => RequirementResult,
  concurrency = Number.POSITIVE_INFINITY,
): Promise<RequirementResult[]> {
  if (items.length === 0) return [];
  const out: RequirementResult[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      const item = items[i]!;
      out[i] = Date.now() > deadlineMs ? fallback(item, "past the time budget") : await run(item).catch((error: unknown) => fallback(item, `error: ${describeError(error)}`));
    }
  };
  await Promise.all(Array.from({ length: Math.min(items.length, concurrency) }, worker));
  const failed = out.filter((r) => r.status !== "pass").length;
  log(`${name}: ${out.length - failed}/${out.length} passed`);
  return out;
}

async function ephemeral(plan: CertificationPlan, instanceCount: number, deadlineMs: number, log: (l: string) => void): Promise<RequirementResult[]> {
  const token = `svc_cert_${randomBytes(12).toString("hex")}`;
  let redis: OwnRedis | null = null;
  const servers: SpawnedServer[] = [];
  const results: RequirementResult[] = [];
  try {
    redis = await startOwnRedis();
    const client = createRedisClient({ url: redis.url, commandTimeoutMs: 5_000, name: "sluice-certify" });
    try {
      await writePublishedPolicy(client, plan.doc, {
        keyIndex: plan.keys.map((k) => ({ keyHash: sha256Hex(k.key), tenant: k.tenant })),
        serviceTokens: [sha256Hex(token)],
      });
    } finally {
      client.disconnect();
    }
    log(`redis-server on :${redis.port}; starting ${instanceCount} decision server${instanceCount === 1 ? "" : "s"}`);
    const env = { REDIS_URL: redis.url, REDIS_CLUSTER_NODES: "", SLUICE_MODE: "redis", SLUICE_INSTANCES: String(instanceCount), SLUICE_ACCURACY_SAMPLE: "1", SLUICE_GRPC_PORT: "0", POLICY_POLL_MS: "1000" };
    for (const s of await Promise.all(Array.from({ length: instanceCount }, () => spawnDecisionServer(env, { waitReady: true })))) servers.push(s);
    const endpoints: Endpoint[] = servers.map((s) => ({ url: s.url, token }));
    for (const s of servers) {
      s.child.once("exit", (code) => log(`decision server on :${s.port} exited (${code}): ${s.output().trim().split("\n").slice(-3).join(" | ")}`));
    }
    const e0 = endpoints[0]!;
    const cellsWith = (scenario: keyof Cell["subjects"]) => plan.cells.filter((c) => c.subjects[scenario]);
    const na = (requirement: RequirementResult["requirement"]) => (c: Cell, why: string) => notVerified(requirement, c.label, why);

    const models = new Map<Cell, ProbeResult>();
    results.push(
      ...(await phase("boundary (N-th allowed, N+1-th rejected)", cellsWith("boundary"), deadlineMs, log, async (c) => {
        const { result, model } = await boundary(e0, plan, c);
        models.set(c, model);
        return result;
      }, na("boundary"))),
    );
    const modelOf = (c: Cell) => {
      const m = models.get(c);
      if (!m) throw new Error("no boundary model (the boundary scenario failed to run)");
      return m;
    };
    // Two cells at a time: a burst must stay inside one window, which a loaded machine stretches.
    results.push(...(await phase(`${instanceCount} instances sharing Redis`, cellsWith("instances"), deadlineMs, log, (c) => instancesScenario(endpoints, c, modelOf(c)), na("instances"), 2)));
    results.push(...(await phase("burst at a window edge", cellsWith("edge"), deadlineMs, log, (c) => edge(e0, plan, c), na("boundaryBurst"))));
    results.push(...(await phase("0.5× the limit, never denied", cellsWith("under"), deadlineMs, log, (c) => underLimit(e0, c), na("underLimit"))));
    results.push(...(await phase("1.6× the limit against an exact log", cellsWith("over"), deadlineMs, log, (c) => overLimit(endpoints, c, 7919 * Number(c.id.slice(1))), na("accuracy"))));
    results.push(...(await phase("Retry-After honesty", cellsWith("retry"), deadlineMs, log, (c) => retryAfter(e0, c, modelOf(c), deadlineMs), na("retryAfter"))));

    // Per operation: a cell whose limit applies to it (its own row, else a `*` row) and rejects.
    // Windows first: a bucket refilling fast lets requests through while the path is measured.
    const rank = (c: Cell) => (c.kind === "window" ? 0 : c.kind === "bucket" ? 2 : 1);
    const cellFor = (op: string, scenario: "p95" | "drill") => {
      const candidates = plan.cells.filter((c) => c.subjects[scenario] && c.kind !== "cap").sort((a, b) => rank(a) - rank(b));
      return candidates.find((c) => c.operation === op) ?? candidates.find((c) => c.operation === ANY_OPERATION);
    };
    const withCell = (scenario: "p95" | "drill") => plan.operations.map((op) => ({ op, cell: cellFor(op.name, scenario) }));
    const naOp = (requirement: RequirementResult["requirement"]) => (x: { op: { name: string } }, why: string) => notVerified(requirement, x.op.name, why);
    // One operation after another: their latencies must not queue behind each other.
    const p95: RequirementResult[] = [];
    for (const x of withCell("p95")) {
      p95.push(...(await phase(`reject-path p95 of ${x.op.name}`, [x], deadlineMs, () => undefined, async ({ op, cell }) => {
        if (!cell) return notVerified("rejectP95", op.name, "no limit of the version rejects this operation's requests");
        return rejectP95(e0, op, cell, modelOf(cell));
      }, naOp("rejectP95"))));
    }
    log(`reject-path p95: ${p95.filter((r) => r.status === "pass").length}/${p95.length} operations passed`);
    results.push(...p95);

    // Last: Redis down. Every decision server keeps its policy and the keys it has seen in memory:
    // a dry run (it consumes nothing) shows each drill subject's key to every instance first.
    for (const { cell, op } of withCell("drill")) {
      const s = cell?.subjects.drill;
      if (s) await Promise.all(endpoints.map((e) => checkDry(e, { ...s, operation: op.request })));
    }
    await redis.kill();
    log("redis-server killed: failure modes");
    results.push(
      ...(await phase("failure modes with Redis down", withCell("drill"), deadlineMs + 15_000, log, async ({ op, cell }) => {
        if (!cell) return notVerified("failureMode", op.name, "no limit of the version applies to this operation, so its failure path is never taken");
        return failureDrill(e0, op, cell, instanceCount);
      }, naOp("failureMode"))),
    );
  } finally {
    await Promise.all(servers.map((s) => s.stop().catch(() => null)));
    await redis?.stop().catch(() => undefined);
  }
  return results;
}

async function againstTarget(e: Endpoint, version: number, plan: CertificationPlan, log: (l: string) => void): Promise<RequirementResult[]> {
  const results: RequirementResult[] = [];
  // The target must serve the version being certified: a dry run names the policy version.
  const { answer } = await checkOne(e, { tenant: "", tier: "", key: "sk_certify_probe_unknown_0000", ip: "198.18.0.1", operation: "GET /", limitName: "" });
  log(`target serves policy v${answer.policyVersion}`);
  const served = answer.policyVersion === version;
  const why = served
    ? "needs an ephemeral run (certification tenants, time-compressed windows, a Redis to stop)"
    : `the target serves v${answer.policyVersion}, not v${version}`;
  for (const c of plan.cells) for (const k of ["boundary", "instances", "boundaryBurst", "accuracy"] as const) results.push(notVerified(k, c.label, why));
  for (const op of plan.operations) for (const k of ["rejectP95", "failureMode"] as const) results.push(notVerified(k, op.name, why));
  return results;
}
