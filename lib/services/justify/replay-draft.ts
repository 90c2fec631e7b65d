/**
 * The draft's diff and the simulator ask: "what would the draft have done to the last N days?"
 * Loads the recorded minutes (the most recent ones that fit the budget), replays them through the
 * live version and through the draft (lib/services/justify/replay.ts), compares, and projects the month
 * quotas of both (lib/services/justify/replay-quotas.ts). The live replay is also set beside what the live
 * version really answered in those minutes, which shows how far the model is from reality.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { admittedByTenantOperation, recordedDenialsByTier, recordedMinutes, requestsPerMinute } from "../../db/justify-repo";
import type { CompiledPolicyBody } from "../../policy/compiled";
import { quotaPeriod } from "../../policy/quota-period";
import { compileDraft } from "../policy/publish-policy";
import { readPublishedVersion } from "../policy/published-version";
import { cellsFromRecorded, compareReplays, DEFAULT_REPLAY_BUDGET, replayUsage, type ReplayComparison, type ReplayResult } from "./replay";
import { projectMonthQuotas, type QuotaRunOut } from "./replay-quotas";
import { ServiceError } from "../errors";
import { ARRIVAL_MODEL, DEFAULT_REPLAY_DAYS, MAX_REPLAY_DAYS } from "./justify-input";

export { ARRIVAL_MODEL, DEFAULT_REPLAY_DAYS, MAX_REPLAY_DAYS };

export interface DraftReplay {
  days: number;
  fromMs: number;
  toMs: number;
  requests: number;
  truncated: boolean;
  liveVersion: number;
  comparison: ReplayComparison;
  /** What was really answered in the replayed minutes, per tier (denied: any denial, 429 mostly). */
  recorded: { tier: string; requests: number; denied: number }[];
  quotas: { live: QuotaRunOut[]; draft: QuotaRunOut[]; newlyRunningOut: { tenant: string; operation: string; liveRunsOutOn: string | null; draftRunsOutOn: string }[] };
  notes: string[];
  /** How arrival times inside a minute are modelled, for the page to say. */
  arrivalModel: string;
}

/** Replays the last `days` days through the live version and `draft` (default: the current draft). */
export async function replayDraft(
  db: PrismaClient,
  options: { days?: number; nowMs: number; budget?: number; draft?: CompiledPolicyBody },
): Promise<DraftReplay> {
  const days = options.days ?? DEFAULT_REPLAY_DAYS;
  if (!Number.isInteger(days) || days < 1 || days > MAX_REPLAY_DAYS) {
    throw new ServiceError("invalid_request", `days: expected a whole number from 1 to ${MAX_REPLAY_DAYS}`, { field: "days" });
  }
  const budget = options.budget ?? DEFAULT_REPLAY_BUDGET;
  const live = await readPublishedVersion(db);
  const draft = options.draft ?? (await compileDraft(db));
  const toMs = Math.floor(options.nowMs / 60_000) * 60_000;
  let fromMs = toMs - days * 86_400_000;
  // The most recent minutes that fit the budget (decided on the per-minute totals, before loading rows).
  const perMinute = await requestsPerMinute(db, { fromMs, toMs });
  let total = 0;
  let truncated = false;
  for (let i = perMinute.length - 1; i >= 0; i--) {
    if (total + perMinute[i]!.requests > budget && total > 0) {
      fromMs = perMinute[i]!.minuteMs + 60_000;
      truncated = true;
      break;
    }
    total += perMinute[i]!.requests;
  }
  const recorded = await recordedMinutes(db, { fromMs, toMs });
  const cells = cellsFromRecorded(recorded);
  const liveReplay = await replayUsage(live, cells, { budget });
  const draftReplay = await replayUsage(draft, cells, { budget });
  const comparison = compareReplays(liveReplay, draftReplay);

  const month = quotaPeriod(options.nowMs, "month");
  const monthToDate = await admittedByTenantOperation(db, { fromMs: month.startMs, toMs });
  const ratio = (tenant: string, op: string) => {
    const l = liveReplay.admitted[tenant]?.[op] ?? 0;
    const d = draftReplay.admitted[tenant]?.[op] ?? 0;
    return l > 0 ? d / l : 1;
  };
  const liveQuotas = projectMonthQuotas(live, liveReplay, { monthToDate, nowMs: options.nowMs });
  const draftQuotas = projectMonthQuotas(draft, draftReplay, { monthToDate, scale: ratio, nowMs: options.nowMs });
  const newlyRunningOut = draftQuotas
    .filter((d) => d.runsOutOn !== null)
    .map((d) => {
      const l = liveQuotas.find((x) => x.tenant === d.tenant && x.operation === d.operation);
      return { tenant: d.tenant, operation: d.operation, liveRunsOutOn: l?.runsOutOn ?? null, draftRunsOutOn: d.runsOutOn! };
    })
    .filter((x) => x.liveRunsOutOn === null || x.draftRunsOutOn < x.liveRunsOutOn);

  const notes = [...new Set([...liveReplay.notes, ...draftReplay.notes])];
  if (truncated) notes.push(`Replayed from ${new Date(fromMs).toISOString()} only: older minutes do not fit the budget of ${budget.toLocaleString("en-US")} requests.`);
  const unknown = [...new Set([...liveReplay.unknownTenants, ...draftReplay.unknownTenants])];
  if (unknown.length > 0) notes.push(`Recorded tenants one of the versions does not have (not replayed there): ${unknown.slice(0, 10).join(", ")}${unknown.length > 10 ? ", …" : ""}.`);
  return {
    days,
    fromMs,
    toMs,
    requests: liveReplay.requests,
    truncated: truncated || liveReplay.truncated,
    liveVersion: live.version,
    comparison,
    recorded: await recordedDenialsByTier(db, { fromMs, toMs }),
    quotas: { live: liveQuotas, draft: draftQuotas, newlyRunningOut },
    notes,
    arrivalModel: ARRIVAL_MODEL,
  };
}

export type { ReplayResult };
