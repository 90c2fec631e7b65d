/**
 * Durations as written in the policy file: an integer and a unit, `500ms`, `30s`, `1m`, `1h`, `1d`.
 * Stored and computed as whole milliseconds.
 */
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export const DURATION_PATTERN = /^([1-9][0-9]{0,9})(ms|s|m|h|d)$/;

/** Parses `30s` into 30000; returns null for anything that is not a duration. */
export function parseDurationMs(text: string): number | null {
  const match = DURATION_PATTERN.exec(text.trim());
  if (!match) return null;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return Number.isSafeInteger(ms) ? ms : null;
}

/** Formats milliseconds as the largest unit that divides them exactly: 60000 → `1m`. */
export function formatDurationMs(ms: number): string {
  for (const unit of ["d", "h", "m", "s"] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
