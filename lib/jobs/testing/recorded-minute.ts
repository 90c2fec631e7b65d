/**
 * A test kit: one minute of decisions written to UsageRollup exactly as production writes them —
 * each decision recorded by the decision servers' UsageRecorder (with the reason and, for a 429,
 * the check that denied it, as lib/decision/engine.ts records them), the minute's fields parsed as
 * the rollup parses a drained hash, and its rows built and inserted by the rollup's own code.
 */
import type { Db } from "../../db/client";
import { DENIAL_STATUS, type DenialReason } from "../../policy/denial-reasons";
import { UsageRecorder } from "../../redis/usage";
import { parseUsageHash } from "../../redis/usage-format";
import { insertRollupRows, rollupRows } from "../rollup";

/** One tenant's decisions on one operation in the minute: those that passed, and the denials by reason. */
export interface MinuteDecisions {
  tenant: string;
  tier?: string;
  operation?: string;
  allowed: number;
  denied?: Partial<Record<DenialReason, number>>;
  /** Latency of each decision (ms; default 1). */
  latencyMs?: number;
}

/** Records `rows` for the minute starting at `minuteMs` and writes the rollup's rows for it. */
export async function writeRecordedMinute(db: Db, minuteMs: number, rows: readonly MinuteDecisions[]): Promise<void> {
  const recorder = new UsageRecorder(null);
  for (const r of rows) {
    const tier = r.tier ?? "free";
    const operation = r.operation ?? "orders-read";
    const base = { atMs: minuteMs + 1_000, tenant: r.tenant, tier, operation, keyPrefix: "0123456789ab", latencyMs: r.latencyMs ?? 1 };
    for (let i = 0; i < r.allowed; i++) recorder.record({ ...base, outcome: "allowed" });
    for (const [reason, n] of Object.entries(r.denied ?? {}) as [DenialReason, number][]) {
      // A 429 names the check that denied it; a 401, 403 or 503 names none (lib/decision/decide.ts denialOf).
      const deniedLimit = DENIAL_STATUS[reason] === 429 ? `${tier}-${operation}-api_key` : null;
      for (let i = 0; i < n; i++) recorder.record({ ...base, outcome: "denied", deniedReason: reason, deniedLimit });
    }
  }
  const fields = recorder.snapshot().get(minuteMs) ?? new Map<string, number>();
  const usage = parseUsageHash(minuteMs, Object.fromEntries([...fields].map(([f, n]) => [f, String(n)])));
  await db.$transaction((tx) => insertRollupRows(tx, rollupRows(usage)));
}
