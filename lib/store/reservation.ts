/**
 * Reservation ids: `rsv_<token>_<records>` (token: 32 hex; records: the base64url JSON list of its
 * record keys, one per hash slot, lib/redis/keys.ts), so `settle` needs nothing else. A reservation
 * not settled within RESERVATION_TTL_MS stays charged in full (erring on the side of limiting).
 */
export const RESERVATION_TTL_MS = 10 * 60_000;

export function formatReservationId(token: string, records: readonly string[]): string {
  return `rsv_${token}_${Buffer.from(JSON.stringify(records)).toString("base64url")}`;
}

export function parseReservationId(id: string): { token: string; records: string[] } | null {
  const match = /^rsv_([0-9a-f]{32})_([A-Za-z0-9_-]{1,2000})$/.exec(id);
  if (!match) return null;
  try {
    const records: unknown = JSON.parse(Buffer.from(match[2]!, "base64url").toString("utf8"));
    if (!Array.isArray(records) || records.length === 0 || records.length > 64) return null;
    if (!records.every((r) => typeof r === "string" && r.length <= 512 && r.endsWith(`:rsv:${match[1]}`))) return null;
    return { token: match[1]!, records: records as string[] };
  } catch {
    return null;
  }
}
