/**
 * Calendar periods of quotas, in UTC: a `day` runs from 00:00 to the next 00:00, a `month` from the
 * 1st 00:00 to the next month's 1st. Pure integer arithmetic (Howard Hinnant's civil-from-days),
 * mirrored line for line in the Redis store's Lua, which has no date library.
 */
import type { Period } from "./types";

const DAY_MS = 86_400_000;

export interface QuotaPeriod {
  startMs: number;
  endMs: number;
  /** `2026-12` for a month, `2026-12-02` for a day: the suffix of the quota's Redis key. */
  label: string;
}

/** Days since 1970-01-01 → [year, month 1–12, day 1–31]. */
export function civilFromDays(days: number): [number, number, number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

/** [year, month 1–12, day] → days since 1970-01-01. */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = month > 2 ? month - 3 : month + 9;
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

const pad = (n: number) => String(n).padStart(2, "0");

export function quotaPeriod(nowMs: number, period: Period): QuotaPeriod {
  const days = Math.floor(nowMs / DAY_MS);
  const [y, m, d] = civilFromDays(days);
  if (period === "day") {
    return { startMs: days * DAY_MS, endMs: (days + 1) * DAY_MS, label: `${y}-${pad(m)}-${pad(d)}` };
  }
  const next = m === 12 ? [y + 1, 1] : [y, m + 1];
  return {
    startMs: daysFromCivil(y, m, 1) * DAY_MS,
    endMs: daysFromCivil(next[0], next[1], 1) * DAY_MS,
    label: `${y}-${pad(m)}`,
  };
}

/** The Redis key of a quota counter for the period containing `nowMs` (base key from lib/redis/keys.ts). */
export function quotaPeriodKey(baseKey: string, nowMs: number, period: Period): string {
  return `${baseKey}:${quotaPeriod(nowMs, period).label}`;
}
