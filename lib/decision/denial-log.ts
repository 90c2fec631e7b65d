/**
 * Denials, counted and written as one log line per reason per interval instead of one per
 * request: under an attack or a misconfigured client, a line per denied request would cost more
 * than the decision and drown every other line. `record` runs on each denied decision (one map
 * lookup and an increment; the first denial of a reason in an interval also keeps its tenant, tier
 * and operation as the example); allowed decisions never reach it. `drain` hands back the lines of
 * the interval and starts the next one. Pure: the caller owns the timer and the logger.
 */
import type { Reason } from "../policy/types";

export interface DeniedAnswer {
  reason: Reason;
  tenant: string | null;
  tier: string | null;
  operation: string | null;
}

/** One line: how many decisions were denied for `reason` since the last drain, and one of them. */
export interface DenialLine {
  reason: Reason;
  count: number;
  example: { tenant: string | null; tier: string | null; operation: string | null };
}

export class DenialLog {
  private classes = new Map<Reason, DenialLine>();

  record(answer: DeniedAnswer): void {
    const line = this.classes.get(answer.reason);
    if (line !== undefined) line.count++;
    else this.classes.set(answer.reason, { reason: answer.reason, count: 1, example: { tenant: answer.tenant, tier: answer.tier, operation: answer.operation } });
  }

  /** The lines since the last drain, most frequent first; empty when nothing was denied. */
  drain(): DenialLine[] {
    if (this.classes.size === 0) return [];
    const lines = [...this.classes.values()].sort((a, b) => b.count - a.count);
    this.classes = new Map();
    return lines;
  }
}
