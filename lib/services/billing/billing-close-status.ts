/**
 * Whether a billing month is closed, and if it is past its close but still open, why: the worker's
 * close job (lib/jobs/billing-close.ts) has not run since the close was due, or ran and did not
 * close it. Read-only: the page says so, the worker closes.
 */
import type { Db } from "../../db/client";
import { readJobRun } from "../../db/job-runs";
import { closeDueAtMs } from "./billing-statement";

export interface CloseStatus {
  /** The month's end (or its last tenant period's, if later) plus BILLING_GRACE_MS: when the worker closes it. */
  closesAtMs: number;
  /** Due and still open. */
  overdue: boolean;
  /** When the worker's close job last ran; null: never in this database. */
  lastRunAtMs: number | null;
  /** Why it is still open once overdue, in a sentence; null when it is not overdue. */
  why: string | null;
}

const at = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;

function ago(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes < 120) return `${minutes} minute${minutes === 1 ? "" : "s"} ago`;
  const hours = Math.round(ms / 3_600_000);
  return hours < 48 ? `${hours} hours ago` : `${Math.round(ms / 86_400_000)} days ago`;
}

export async function closeStatus(db: Db, month: string, { status, nowMs, graceMs }: { status: "provisional" | "final"; nowMs: number; graceMs: number }): Promise<CloseStatus> {
  const closesAtMs = await closeDueAtMs(db, month, graceMs);
  const run = await readJobRun(db, "billing-close");
  const lastRunAtMs = run?.lastRunAtMs ?? null;
  const overdue = status === "provisional" && nowMs >= closesAtMs;
  let why: string | null = null;
  if (overdue) {
    if (lastRunAtMs === null) why = "the worker's close job has never run against this database: is the worker (`npm run worker`) running?";
    else if (lastRunAtMs < closesAtMs) why = `the worker's close job has not run since ${at(lastRunAtMs)} (${ago(nowMs - lastRunAtMs)}): is the worker running?`;
    else why = `the worker's close job last ran at ${at(lastRunAtMs)} (${ago(nowMs - lastRunAtMs)}) and did not close it: its log says why.`;
  }
  return { closesAtMs, overdue, lastRunAtMs, why };
}
