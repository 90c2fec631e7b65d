/** Number formatting shared by the Justify and Prove panels. */
export const num = (n: number) => n.toLocaleString("en-US");

/** A share in [0, 1] as a percentage with one decimal ("12.5%"); tiny non-zero shares show as "<0.1%". */
export function pct(share: number): string {
  if (share > 0 && share < 0.001) return "<0.1%";
  return `${(share * 100).toFixed(1)}%`;
}

/** The change between two shares in percentage points, signed ("+12.0 pp", "−3.1 pp", "±0"). */
export function deltaPp(before: number, after: number): string {
  const d = (after - before) * 100;
  if (Math.abs(d) < 0.05) return "±0";
  return `${d > 0 ? "+" : "−"}${Math.abs(d).toFixed(1)} pp`;
}

export const day = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ") + " UTC";
