/**
 * envoyproxy/ratelimit's time units, as its config and its `RateLimitResponse.RateLimit.Unit`
 * name them. A unit is also its fixed window: `[⌊now / length⌋ · length, +length)` in Unix
 * seconds, so a month is 30 days and a year 365 (their `UnitToDivider`), aligned to the epoch,
 * not to the calendar (calendar periods are Sluice's `period`).
 */
export const ENVOY_UNITS = ["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"] as const;
export type EnvoyUnit = (typeof ENVOY_UNITS)[number];

/** What `current_limit.unit` says of a window that is no single unit (a Sluice `window: 90s`). */
export const UNKNOWN_UNIT = "UNKNOWN";
export type ReportedUnit = EnvoyUnit | typeof UNKNOWN_UNIT;

export const UNIT_SECONDS: Readonly<Record<EnvoyUnit, number>> = {
  SECOND: 1,
  MINUTE: 60,
  HOUR: 3_600,
  DAY: 86_400,
  WEEK: 604_800,
  MONTH: 2_592_000,
  YEAR: 31_536_000,
};

/** A unit as their config accepts it: any case (`second`, `Second`, `SECOND`); null for anything else. */
export function parseEnvoyUnit(text: string): EnvoyUnit | null {
  const upper = text.toUpperCase();
  return (ENVOY_UNITS as readonly string[]).includes(upper) ? (upper as EnvoyUnit) : null;
}

/** The unit whose length is exactly `windowMs` (60s → MINUTE), else UNKNOWN. */
export function unitOfWindowMs(windowMs: number): ReportedUnit {
  for (const unit of ENVOY_UNITS) if (UNIT_SECONDS[unit] * 1000 === windowMs) return unit;
  return UNKNOWN_UNIT;
}
