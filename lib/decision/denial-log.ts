/**
 * Denials, logged as one line per reason per interval instead of one per request: under an attack
 * or a misconfigured client, a line per denial would cost more than the decision and drown every
 * other line. Pure: the caller owns the timer and the logger.
 */
import type { Reason } from "../policy/types";
import type { DecisionAnswer } from "./answer";

type DeniedAnswer = Pick<DecisionAnswer, "reason" | "tenant" | "tier" | "operation">;

/** One line: how many decisions were denied for `reason` since the last drain, and the first of them. */
export interface DenialLine {
  reason: Reason;
  count: number;
  example: Omit<DeniedAnswer, "reason">;
}

export class DenialLog {
  private classes = new Map<Reason, DenialLine>();

  /** One denied decision: a map lookup and an increment. */
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
