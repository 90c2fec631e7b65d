/**
 * Wall-clock arithmetic in an IANA time zone, with nothing but Intl.DateTimeFormat (this module
 * runs in the decision server, the control plane and the browser): a zone's offset at an instant,
 * the local date of an instant, and the instant a local date starts (its local midnight, or the
 * end of the daylight-saving gap when midnight does not exist that day).
 */
const DAY_MS = 86_400_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether Intl knows `timeZone` (an IANA name such as America/Los_Angeles, or UTC). */
export function isKnownTimeZone(timeZone: string): boolean {
  // Offsets (+05:00) and other non-names are refused even where a newer Intl accepts them.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/.test(timeZone)) return false;
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The local wall clock at `ms` in `timeZone`: [year, month 1–12, day, hour, minute, second]. */
export function wallClock(ms: number, timeZone: string): [number, number, number, number, number, number] {
  const out = [0, 0, 0, 0, 0, 0] as [number, number, number, number, number, number];
  for (const part of formatter(timeZone).formatToParts(ms)) {
    const i = PART_INDEX[part.type];
    if (i !== undefined) out[i] = Number(part.value);
  }
  return out;
}

const PART_INDEX: Partial<Record<string, number>> = { year: 0, month: 1, day: 2, hour: 3, minute: 4, second: 5 };

/** The zone's offset from UTC at `ms`, in ms (local = UTC + offset), to the second. */
export function zoneOffsetMs(ms: number, timeZone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  const [y, mo, d, h, mi, s] = wallClock(whole, timeZone);
  return Date.UTC(y, mo - 1, d, h, mi, s) - whole;
}

/** [year, month 1–12, day] of `ms` in `timeZone`. */
export function localDate(ms: number, timeZone: string): [number, number, number] {
  const [y, m, d] = wallClock(ms, timeZone);
  return [y, m, d];
}

/**
 * The first instant of local date (year, month, day) in `timeZone`: its local midnight. Where a
 * daylight-saving change skips midnight (the clock jumps from 23:59:59 to 01:00), the day starts
 * when the jump happens; where midnight happens twice (the clock falls back across it), at the
 * first one. The offsets a day before and after bracket any change on that day.
 */
export function startOfLocalDay(year: number, month: number, day: number, timeZone: string): number {
  const wall = Date.UTC(year, month - 1, day);
  const before = zoneOffsetMs(wall - DAY_MS, timeZone);
  const first = wall - before;
  if (zoneOffsetMs(first, timeZone) === before) return first;
  const after = zoneOffsetMs(wall + DAY_MS, timeZone);
  const second = wall - after;
  if (zoneOffsetMs(second, timeZone) === after) return second;
  // Midnight falls in the gap: the instant of the jump is `first` (old offset, new wall clock).
  return first;
}

/** Days in a month of the proleptic Gregorian calendar. */
export function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

const pad = (n: number) => String(n).padStart(2, "0");

/** `2026-03-15` */
export function isoDate(year: number, month: number, day: number): string {
  return `${String(year).padStart(4, "0")}-${pad(month)}-${pad(day)}`;
}

/** `2026-03-15T134510`: the local wall clock at `ms`, to the second, without separators a key would trip on. */
export function localStamp(ms: number, timeZone: string): string {
  const [y, mo, d, h, mi, s] = wallClock(ms, timeZone);
  return `${isoDate(y, mo, d)}T${pad(h)}${pad(mi)}${pad(s)}`;
}
