/**
 * What the worker's periodic jobs last did (JobRun rows), so the control plane can say it where
 * people look: when the billing close last ran (a month past its close that is still open says
 * why), and which quota counters differed from quota usage at the last reconciliation. Only the
 * worker writes these rows; pages read them. Results are parsed on the way out: a row this
 * version cannot read is treated as absent, never trusted.
 */
import { z } from "zod";
import type { Prisma } from "../generated/prisma/client";
import type { Db } from "./client";

export const JOB_RUN_NAMES = ["billing-close", "reconcile"] as const;
export type JobRunName = (typeof JOB_RUN_NAMES)[number];

/** One quota counter that differs from quota usage beyond what is in flight or passed degraded. */
export const driftSchema = z.object({
  tenant: z.string(),
  quotaId: z.string(),
  /** The quota's period: `2026-12` or `2026-12-05`. */
  period: z.string(),
  /** Units the Redis counter (what enforcement decides on) held. */
  redis: z.number(),
  /** Units in quota usage (what the export bills), drained plus still in flight at the reading. */
  expected: z.number(),
  /** Decisions of the tenant that passed degraded this period (they never reached the counter). */
  degraded: z.number(),
});
export type Drift = z.infer<typeof driftSchema>;

export const JOB_RESULTS = {
  "billing-close": z.object({ closed: z.array(z.string()) }),
  reconcile: z.object({ differences: z.array(driftSchema), checked: z.number().int().min(0) }),
} as const satisfies Record<JobRunName, z.ZodType>;
export type JobResult<J extends JobRunName> = z.infer<(typeof JOB_RESULTS)[J]>;

export async function recordJobRun<J extends JobRunName>(db: Db, job: J, { nowMs, result }: { nowMs: number; result: JobResult<J> }): Promise<void> {
  const data = { lastRunAt: new Date(nowMs), result: JOB_RESULTS[job].parse(result) as Prisma.InputJsonObject };
  await db.jobRun.upsert({ where: { job }, create: { job, ...data }, update: data });
}

export async function readJobRun<J extends JobRunName>(db: Db, job: J): Promise<{ lastRunAtMs: number; result: JobResult<J> } | null> {
  const row = await db.jobRun.findUnique({ where: { job } });
  if (!row) return null;
  const parsed = JOB_RESULTS[job].safeParse(row.result);
  return parsed.success ? { lastRunAtMs: row.lastRunAt.getTime(), result: parsed.data as JobResult<J> } : null;
}
