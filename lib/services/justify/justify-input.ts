/**
 * What a person may ask the Justify tools (docs/proving.md): the replay's
 * days, the limit advisor's query, the capacity planner's inputs. Pure zod, so the pages, the
 * server actions and the browser validate with the same schemas; every error names its field.
 */
import { z } from "zod";
import { parseDurationMs } from "../../policy/duration";
import { issueInWords } from "../../policy/plain-messages";

export const DEFAULT_REPLAY_DAYS = 7;
export const MAX_REPLAY_DAYS = 30;

/** What the replay cannot know and how it models it, said on every page that shows a replay. */
export const ARRIVAL_MODEL =
  "Usage is recorded per minute, so when each request arrived inside its minute is not known. The replay spreads a subject's requests of one operation evenly over their minute (at (i + ½) · 60 s / n) and interleaves all subjects by those times. Real traffic is burstier: for limits of a minute or less, bursts inside a minute make more 429s than the replay shows (read its 429s as a lower bound).";

/** A blank form field is "not given". */
const blank = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

export const replayInputSchema = z.strictObject({
  days: z.preprocess(
    blank,
    z.coerce
      .number({ error: "expected a whole number of days" })
      .int({ error: "expected a whole number of days" })
      .min(1, { error: `expected 1 to ${MAX_REPLAY_DAYS} days` })
      .max(MAX_REPLAY_DAYS, { error: `expected 1 to ${MAX_REPLAY_DAYS} days` })
      .default(DEFAULT_REPLAY_DAYS),
  ),
});
export type ReplayInput = z.infer<typeof replayInputSchema>;

export const ADVISOR_SCOPES = ["api_key", "tenant", "global", "ip"] as const;
export const ADVISOR_UNITS = ["second", "minute", "hour"] as const;

/** The advisor's query, as the page's form sends it (strings; blank = not given). */
export const advisorInputSchema = z
  .strictObject({
    tier: z.string({ error: "choose a tier" }).trim().min(1, { error: "choose a tier" }).max(100),
    operation: z.preprocess(blank, z.string().trim().min(1).max(200).default("*")),
    scope: z.preprocess(blank, z.enum(ADVISOR_SCOPES, { error: `expected one of ${ADVISOR_SCOPES.join(", ")}` }).default("api_key")),
    limit: z.preprocess(
      blank,
      z.coerce
        .number({ error: "expected a whole number ≥ 1" })
        .int({ error: "expected a whole number ≥ 1" })
        .min(1, { error: "expected a whole number ≥ 1" })
        .max(1_000_000_000, { error: "expected at most 1,000,000,000" })
        .optional(),
    ),
    per: z.preprocess(blank, z.enum(ADVISOR_UNITS, { error: `expected one of ${ADVISOR_UNITS.join(", ")}` }).default("minute")),
  });
export type AdvisorInput = z.infer<typeof advisorInputSchema>;

/** The capacity planner's form: what the downstream takes, how busy it may be, the cap's window. */
export const capacityInputSchema = z.strictObject({
  capacityPerSecond: z.preprocess(
    blank,
    z.coerce
      .number({ error: "expected requests per second > 0" })
      .positive({ error: "expected requests per second > 0" })
      .max(1e9, { error: "expected at most 1,000,000,000 requests per second" }),
  ),
  utilisationPct: z.preprocess(
    blank,
    z.coerce
      .number({ error: "expected a percentage in (0, 100]" })
      .gt(0, { error: "expected a percentage in (0, 100]" })
      .max(100, { error: "expected a percentage in (0, 100]" }),
  ),
  window: z.preprocess(
    blank,
    z
      .string({ error: "expected a duration such as 1s or 1m" })
      .trim()
      .refine((w) => {
        const ms = parseDurationMs(w);
        return ms !== null && ms <= 86_400_000;
      }, { error: "expected a duration such as 1s or 1m (at most 1d)" }),
  ),
});
export type CapacityFormInput = z.infer<typeof capacityInputSchema>;

export interface FieldError {
  field: string;
  message: string;
  /** What the page shows: the field by its label on the form, "Days to replay: expected 1 to 30 days". */
  text: string;
}

/** Each field's label on the Justify forms (the replay panel, the advisor, the capacity planner). */
export const JUSTIFY_FIELD_LABELS: Readonly<Record<string, string>> = {
  days: "Days to replay",
  tier: "Tier",
  operation: "Operation",
  scope: "Scope",
  limit: "Proposed limit",
  per: "Per",
  capacityPerSecond: "Downstream capacity (requests/s)",
  utilisationPct: "Target utilisation (%)",
  window: "Cap window",
  input: "Form",
};

/** One field error, said with the field's label. */
export function fieldError(field: string, message: string): FieldError {
  return { field, message, text: issueInWords({ path: field, message }, JUSTIFY_FIELD_LABELS) };
}

/** A zod failure as field errors (field `days`, text "Days to replay: expected 1 to 30 days"). */
export function fieldErrors(error: { issues: readonly { path: readonly PropertyKey[]; message: string; code?: string }[] }): FieldError[] {
  return error.issues.map((i) => {
    const field = i.path.map(String).join(".") || (i.code === "unrecognized_keys" ? "input" : "");
    const message = i.code === "unrecognized_keys" ? i.message.toLowerCase() : i.message;
    return fieldError(field, message);
  });
}

/** Reads the first value of each search parameter (`?a=1&a=2` → "1"). */
export function firstParams(params: Record<string, string | string[] | undefined>, keys: readonly string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const k of keys) {
    const v = params[k];
    out[k] = Array.isArray(v) ? v[0] : v;
  }
  return out;
}
