/**
 * The acceptance scenarios of `sluice certify`, run against decision servers over their public API
 * (docs/proving.md). Each returns requirement results; what a limit should do comes from the pure
 * model (lib/services/justify/limit-probe.ts: the engine's own code on a clock of our own), what it does
 * from the servers' answers.
 */
import { accuracyRemedy } from "../../policy/accuracy-remedy";
import { poisson } from "../../policy/poisson";
import { percentiles } from "../justify/advisor";
import { edgeBurstRequests, probeLimit, type ProbedRow, type ProbeResult } from "../justify/limit-probe";
import { type Answer, checkBatch, checkOne, type Endpoint, metricValue, readMetrics, sendAt, sendBatch, sleep } from "./decision-client";
import type { CertificationPlan, Cell, Subject } from "./plan";
import type { RequirementResult } from "./report";

/** The pure model of a subject's limit, as the certification document serves it. */
export function modelOf(plan: CertificationPlan, cell: Cell, s: Subject): ProbedRow {
  const tier = plan.doc.tiers[s.tier]!;
  if (cell.kind === "quota") return { kind: "quota", tier, quota: tier.quotas[0]! };
  if (cell.kind === "cap") return { kind: "global", tier, cap: plan.doc.globalCaps.find((c) => c.operation === s.operation)! };
  return { kind: "limit", tier, limit: tier.limits[0]! };
}

function units(cell: Cell): number {
  return cell.limit?.limit ?? cell.quota?.limit ?? cell.cap?.limit ?? 0;
}

function windowMsOf(cell: Cell): number {
  return cell.limit?.windowMs ?? cell.cap?.windowMs ?? 0;
}

const ALGO = "the algorithm";

/**
 * Answers decided without Redis (the store budget, REDIS_TIMEOUT_MS, ran out on a slow machine, and
 * the failure mode answered): such a run says nothing about the algorithm.
 */
function degradedNote(answers: readonly Answer[]): string | null {
  const n = answers.filter((a) => a.degraded).length;
  return n > 0 ? `${n} of ${answers.length} answers were degraded (decided without Redis: the store budget ran out)` : null;
}

/** Boundary: from a fresh state, exactly the model's requests pass (the N-th), and the next is rejected (or reported, in shadow mode). */
export async function boundary(e: Endpoint, plan: CertificationPlan, cell: Cell): Promise<{ result: RequirementResult; model: ProbeResult }> {
  const s = cell.subjects.boundary!;
  const model = await probeLimit(modelOf(plan, cell, s), cell.cost, s.operation);
  const answers = await checkBatch(e, s, model.admittedAtOnce + 1);
  const admitted = answers.filter((a) => a.allowed && !a.shadowDenied).length;
  const next = answers[answers.length - 1]!;
  const delayed = answers.filter((a) => a.allowed && a.delayMs > 0).length;
  const nextOk = model.next === null ? next.allowed : model.next.shadowDenied ? next.allowed && next.shadowDenied === true : !next.allowed && next.status === model.next.status && next.reason === model.next.reason;
  const ok = (model.next === null ? admitted === answers.length : admitted === model.admittedAtOnce) && delayed === model.delayed && nextOk && answers.slice(0, -1).every((a) => a.allowed);
  const expect = model.next === null ? `all ${model.admittedAtOnce + 1} admitted` : `${model.admittedAtOnce} admitted${model.delayed ? ` (${model.delayed} delayed)` : ""}, the next ${model.next.shadowDenied ? "reported shadowDenied" : `${model.next.status} ${model.next.reason}`}`;
  const got = `${admitted} admitted${delayed ? ` (${delayed} delayed)` : ""}, the next ${next.allowed ? (next.shadowDenied ? "reported shadowDenied" : "allowed") : `${next.status} ${next.reason}`}`;
  const degraded = degradedNote(answers);
  return { result: { requirement: "boundary", subject: cell.label, source: ALGO, expected: expect, measured: degraded ?? got, status: degraded ? "not_verified" : ok ? "pass" : "fail" }, model };
}

/** Waits until the next instant that is `offsetMs` past an epoch-aligned window edge (ms, local clock). */
async function untilPhase(windowMs: number, fromFraction: number, toFraction: number): Promise<void> {
  for (;;) {
    const phase = (Date.now() % windowMs) / windowMs;
    if (phase >= fromFraction && phase <= toFraction) return;
    await sleep(Math.min(20, windowMs / 20));
  }
}

/**
 * The burst at a window edge: as much as passes up to 1 s before an edge, then as much as passes
 * 20 ms after it. The algorithm's own bound is the model's answer for those instants (the second
 * burst 5 … 35 ms past the edge: clock and network); the requirement: `allowed`, within that
 * bound; `forbidden`, at most the limit plus the accuracy tolerance.
 */
export async function edge(e: Endpoint, plan: CertificationPlan, cell: Cell): Promise<RequirementResult> {
  const s = cell.subjects.edge!;
  const windowMs = windowMsOf(cell);
  const limit = units(cell);
  const perRequest = Math.max(1, cell.cost);
  // Anywhere in the window before the edge counts the same (a window's count, the previous window's
  // weight, a log's entries), so the first burst goes early enough to be answered before the edge.
  const beforeMs = Math.min(1_000, windowMs / 2);
  const afterMs = 20;
  const row = modelOf(plan, cell, s);
  const want = Math.ceil(limit / perRequest) + 1;
  const nextEdge = Math.ceil((Date.now() + 2 * beforeMs) / windowMs) * windowMs;
  await sleep(nextEdge - beforeMs - Date.now());
  const before = await checkBatch(e, s, want);
  const beforeDoneMs = Date.now();
  await sleep(nextEdge + afterMs - Date.now());
  const after = await checkBatch(e, s, want + 2);
  // Decided at most this long after the edge: the algorithm's bound is its model's admission then
  // (a sliding window frees more the later it is asked; a fixed window's burst does not change).
  const lateMs = Math.max(afterMs, Date.now() - nextEdge);
  const boundUnits = await edgeBurstRequests(row, perRequest, windowMs, lateMs, beforeMs);
  const nominalUnits = await edgeBurstRequests(row, perRequest, windowMs, afterMs, beforeMs);
  // Shadow limits never reject: what they would have enforced is what they did not report.
  const admittedUnits = [...before, ...after].filter((a) => a.allowed && !a.shadowDenied).length * perRequest;
  const forbidden = cell.requirements.boundaryBurst.value === "forbidden";
  const ceiling = forbidden ? Math.floor(limit * (1 + cell.requirements.accuracy.value)) : boundUnits;
  const ratio = (x: number) => `${x} units (${(x / limit).toFixed(2)}× the limit)`;
  const base = {
    requirement: "boundaryBurst" as const,
    subject: cell.label,
    source: forbidden ? cell.requirements.boundaryBurst.source : ALGO,
    expected: forbidden ? `no burst: at most ${ratio(ceiling)} across an edge` : `within the algorithm's bound at an edge: at most ${ratio(boundUnits)}`,
  };
  if (beforeDoneMs >= nextEdge) return { ...base, measured: "the burst before the edge was answered only after it (a slow round trip)", status: "not_verified" };
  const degraded = degradedNote([...before, ...after]);
  if (degraded) return { ...base, measured: degraded, status: "not_verified" };
  if (admittedUnits <= ceiling) return { ...base, measured: ratio(admittedUnits), status: "pass" };
  // Over a forbidden ceiling: the algorithm's own burst (it bursts even when asked on time), or only
  // the window sliding on while a slow answer came back?
  if (forbidden && nominalUnits <= ceiling) {
    return { ...base, measured: `${ratio(admittedUnits)}, but the burst after the edge was answered ${lateMs} ms after it: too late to tell an edge burst from the window sliding`, status: "not_verified" };
  }
  return { ...base, measured: ratio(admittedUnits), status: "fail" };
}

/** Half the limit, evenly spaced, for four windows: not one request may be denied. */
export async function underLimit(e: Endpoint, cell: Cell): Promise<RequirementResult> {
  const s = cell.subjects.under!;
  const windowMs = windowMsOf(cell);
  const requests = Math.max(1, Math.floor(units(cell) / Math.max(1, cell.cost) / 2));
  const gap = windowMs / requests;
  const offsets = Array.from({ length: requests * 4 }, (_, i) => i * gap);
  const answers = await sendAt(e, s, offsets, undefined);
  const denied = answers.filter((a) => !a.allowed).length;
  const degraded = degradedNote(answers);
  if (degraded) return { requirement: "underLimit", subject: cell.label, source: ALGO, expected: `0 of ${answers.length} denied at 0.5× the limit`, measured: degraded, status: "not_verified" };
  return {
    requirement: "underLimit",
    subject: cell.label,
    source: ALGO,
    expected: `0 of ${answers.length} denied at 0.5× the limit`,
    measured: `${denied} denied`,
    status: denied === 0 ? "pass" : "fail",
  };
}

/**
 * 1.6× the limit in Poisson arrivals for ten windows; what the limit admitted against what an
 * exact sliding-window log admits of the same requests, in the steady state: from the end of the
 * first window (both start empty, and that start-up is not sustained load). The exact log is the
 * live accuracy meter's, kept inside the decision script on the same clock (ephemeral servers
 * sample every subject), read from each instance's `sluice_accuracy_admitted_total`.
 */
export async function overLimit(endpoints: readonly Endpoint[], cell: Cell, seed: number): Promise<RequirementResult> {
  const s = cell.subjects.over!;
  const windowMs = windowMsOf(cell);
  const rate = (1.6 * units(cell)) / Math.max(1, cell.cost) / windowMs;
  const offsets = poisson(rate, 10 * windowMs, seed);
  const counts = async () => {
    let limit = 0;
    let exact = 0;
    for (const e of endpoints) {
      const text = await readMetrics(e);
      limit += metricValue(text, "sluice_accuracy_admitted_total", { tier: s.tier, limit: s.limitName, by: "limit" });
      exact += metricValue(text, "sluice_accuracy_admitted_total", { tier: s.tier, limit: s.limitName, by: "exact_log" });
    }
    return { limit, exact };
  };
  const startMs = Date.now();
  const sending = sendAt(endpoints[0]!, s, offsets, undefined);
  await sleep(windowMs);
  const first = await counts();
  await sending;
  const last = await counts();
  const limitAdmitted = last.limit - first.limit;
  const exactAdmitted = last.exact - first.exact;
  const tolerance = cell.requirements.accuracy.value;
  const deviation = exactAdmitted > 0 ? Math.abs(limitAdmitted - exactAdmitted) / exactAdmitted : limitAdmitted === 0 ? 0 : 1;
  return {
    requirement: "accuracy",
    subject: cell.label,
    source: cell.requirements.accuracy.source,
    expected: `within ${(tolerance * 100).toFixed(1)}% of an exact log at 1.6× the limit`,
    measured: exactAdmitted === 0 ? "no sampled admissions (is the accuracy meter on?)" : `${limitAdmitted} admitted vs ${exactAdmitted} by the exact log (${(deviation * 100).toFixed(1)}%), windows 2–10`,
    status: exactAdmitted > 0 && deviation <= tolerance ? "pass" : "fail",
    ...(exactAdmitted > 0 && deviation > tolerance ? { remedy: remedyFor(cell, offsets.map((t) => startMs + t), startMs + windowMs, tolerance) } : {}),
  };
}

/** What would meet the tolerance, measured on the same arrivals (lib/policy/accuracy-remedy.ts). */
function remedyFor(cell: Cell, arrivalsMs: number[], countFromMs: number, tolerance: number): string {
  const l = cell.limit;
  if (!l || cell.algorithm !== "sliding_window_counter") return "algorithm: sliding_window_log (exact; the only algorithm held to an exact log by construction)";
  const remedy = accuracyRemedy({ limit: l.limit, windowMs: l.windowMs, cost: Math.max(1, cell.cost), arrivalsMs, countFromMs, precision: l.precision, tolerance });
  return cell.scaled ? `${remedy.text}, measured at the certified scale ${cell.scaled.to}` : remedy.text;
}


/**
 * N instances sharing Redis: twice what one subject may be admitted, sent at once, round-robin over
 * every instance, early in a window (so no edge is crossed). Exactly the model's count passes; a
 * bucket may refill during the burst, by its rate × the burst's duration.
 */
export async function instances(endpoints: readonly Endpoint[], cell: Cell, model: ProbeResult): Promise<RequirementResult> {
  const s = cell.subjects.instances!;
  const windowMs = windowMsOf(cell);
  if (windowMs > 0) await untilPhase(windowMs, 0.02, 0.2);
  const n = Math.max(2, 2 * model.admittedAtOnce);
  // Small batches (each one store call), round-robin over the instances, all at once: their store
  // calls interleave in Redis as many clients' would.
  const chunk = Math.max(1, Math.ceil(n / (4 * endpoints.length)));
  const started = Date.now();
  const batches = await Promise.all(
    Array.from({ length: Math.ceil(n / chunk) }, (_, i) => sendBatch(endpoints[i % endpoints.length]!, s, Math.min(chunk, n - i * chunk))),
  );
  const finished = Date.now();
  const answers = batches.flat();
  const tookMs = finished - started;
  const admitted = answers.filter((a) => a.allowed).length;
  const refill = cell.kind === "bucket" && cell.limit ? Math.ceil((cell.limit.limit * tookMs) / cell.limit.windowMs / Math.max(1, cell.cost)) : 0;
  const base = {
    requirement: "instances" as const,
    subject: cell.label,
    source: ALGO,
    expected: `${model.admittedAtOnce}${refill ? `–${model.admittedAtOnce + refill} (refill in ${tookMs} ms)` : ""} of ${n} admitted across ${endpoints.length} instances`,
  };
  if (windowMs > 0 && cell.kind !== "bucket" && Math.floor(started / windowMs) !== Math.floor(finished / windowMs)) {
    return { ...base, measured: `the burst took ${tookMs} ms and crossed a window edge`, status: "not_verified" };
  }
  const degraded = degradedNote(answers);
  if (degraded) return { ...base, measured: degraded, status: "not_verified" };
  const ok = admitted >= model.admittedAtOnce && admitted <= model.admittedAtOnce + refill;
  return { ...base, measured: `${admitted} admitted`, status: ok ? "pass" : "fail" };
}

/** Retry-After is honest: after it, the same request passes (a quota's: the seconds to its period's end). */
export async function retryAfter(e: Endpoint, cell: Cell, model: ProbeResult, deadlineMs: number): Promise<RequirementResult> {
  const s = cell.subjects.retry!;
  const sentMs = Date.now();
  const answers = await checkBatch(e, s, model.admittedAtOnce + 1);
  const doneMs = Date.now();
  const denied = answers[answers.length - 1]!;
  const base = { requirement: "retryAfter" as const, subject: cell.label, source: ALGO };
  if (denied.allowed) return { ...base, expected: "a 429 with Retry-After", measured: "the request past the limit was allowed", status: "fail" };
  if (cell.kind === "quota") {
    const end = new Date(sentMs);
    const periodEnd = cell.quota!.period === "day" ? Date.UTC(end.getUTCFullYear(), end.getUTCMonth(), end.getUTCDate() + 1) : Date.UTC(end.getUTCFullYear(), end.getUTCMonth() + 1, 1);
    // decided between the send and the answer: the seconds to the period's end from then, rounded up
    const [low, high] = [Math.ceil((periodEnd - doneMs) / 1000), Math.ceil((periodEnd - sentMs) / 1000)];
    const ok = denied.retryAfterSeconds >= low && denied.retryAfterSeconds <= high;
    return { ...base, expected: `Retry-After ${low === high ? low : `${low}–${high}`} s (to the end of the ${cell.quota!.period})`, measured: `Retry-After ${denied.retryAfterSeconds} s`, status: ok ? "pass" : "fail" };
  }
  const waitMs = denied.retryAfterSeconds * 1000;
  if (Date.now() + waitMs > deadlineMs) return { ...base, expected: "passes after Retry-After", measured: `Retry-After ${denied.retryAfterSeconds} s is past the time budget`, status: "not_verified" };
  await sleep(waitMs);
  const again = (await checkOne(e, s)).answer;
  return {
    ...base,
    expected: `the same request passes after Retry-After (${denied.retryAfterSeconds} s)`,
    measured: again.allowed ? `passed after ${denied.retryAfterSeconds} s` : `still ${again.status} ${again.reason} after ${denied.retryAfterSeconds} s`,
    status: again.allowed ? "pass" : "fail",
  };
}

/**
 * Reject-path p95 of one operation: a subject over its limit, then up to 60 denied requests one
 * after another (at most 120 sent: a fast-refilling limit lets some through). Judged on the decision server's own time per decision (its Server-Timing: from the
 * parsed request to the answer, store call or deny cache included), which is what the decision
 * service controls; the round trip this process saw, network and its own scheduling included, is
 * shown beside it.
 */
export async function rejectP95(e: Endpoint, op: CertificationPlan["operations"][number], cell: Cell, model: ProbeResult): Promise<RequirementResult> {
  const s = { ...cell.subjects.p95!, operation: op.request };
  await checkBatch(e, s, model.admittedAtOnce + 1);
  const server: number[] = [];
  const roundTrip: number[] = [];
  for (let i = 0; i < 120 && server.length < 60; i++) {
    const { answer, latencyMs, serverMs } = await checkOne(e, s);
    if (answer.allowed) continue;
    roundTrip.push(latencyMs);
    if (serverMs !== null) server.push(serverMs);
  }
  const required = op.rejectP95.rejectP95Ms;
  const base = { requirement: "rejectP95" as const, subject: op.name, source: required.source, expected: `p95 ≤ ${required.value} ms` };
  if (server.length < 20) return { ...base, measured: `only ${server.length} of 120 were denied with a Server-Timing`, status: "not_verified" };
  const p95 = percentiles(server).p95;
  return {
    ...base,
    measured: `p95 ${p95.toFixed(2)} ms in the decision server over ${server.length} denied requests (round trip here: p95 ${percentiles(roundTrip).p95.toFixed(1)} ms)`,
    status: p95 <= required.value ? "pass" : "fail",
  };
}

/**
 * With Redis down, an operation behaves as its failure mode says: open → 200 degraded; closed →
 * 503 store_unavailable; local → degraded, and at most the limit's local share (⌊limit /
 * instances⌋) admitted by one instance. A required failure mode must also be the declared one.
 */
export async function failureDrill(e: Endpoint, op: CertificationPlan["operations"][number], cell: Cell, instanceCount: number): Promise<RequirementResult> {
  const s = { ...cell.subjects.drill!, operation: op.request };
  const required = op.rejectP95.failureMode;
  const declared = op.failureMode;
  const share = Math.max(1, Math.floor(units(cell) / instanceCount / Math.max(1, cell.cost)));
  // One batch: the local store decides them at one instant, so no window slides meanwhile.
  const answers = await sendBatch(e, s, share + 2);
  let behaves: boolean;
  let measured: string;
  const admitted = answers.filter((a) => a.allowed).length;
  if (declared === "closed") {
    behaves = answers.every((a) => a.status === 503 && a.reason === "store_unavailable");
    measured = behaves ? "503 store_unavailable" : `answers ${[...new Set(answers.map((a) => `${a.status} ${a.reason}`))].join(", ")}`;
  } else if (declared === "open") {
    behaves = answers.every((a) => a.allowed && a.degraded === true);
    measured = behaves ? "200, degraded: true" : `answers ${[...new Set(answers.map((a) => `${a.status}${a.degraded ? " degraded" : ""}`))].join(", ")}`;
  } else {
    behaves = answers.every((a) => a.degraded === true || !a.allowed) && admitted <= share && admitted >= 1;
    measured = `${admitted} of ${answers.length} admitted locally (share ${share})`;
  }
  const modeOk = required === null || required.value === declared;
  return {
    requirement: "failureMode",
    subject: op.name,
    source: required?.source ?? "the policy (declared)",
    expected: required ? `fails ${required.value}` : `fails ${declared}, as declared`,
    measured: `declared ${declared}; with Redis down: ${measured}`,
    status: modeOk && behaves ? "pass" : "fail",
  };
}
