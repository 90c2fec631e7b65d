/**
 * The /nfr page and its download: which version to show (`?version=N`, validated; default the
 * live one) and its rows or document, from the same functions `sluice nfr` uses.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import type { CompiledPolicy } from "../../policy/compiled";
import { NFR_FORMATS, nfrDocument, nfrRowsOf, type NfrFormat, type NfrRow } from "./nfr";
import { ServiceError } from "../errors";
import { readPublishedVersion } from "../policy/published-version";

export const nfrQuerySchema = z.strictObject({
  version: z
    .string()
    .regex(/^\d{1,9}$/, { error: "expected a version number ≥ 1" })
    .transform(Number)
    .refine((n) => n >= 1, { error: "expected a version number ≥ 1" })
    .optional(),
  format: z.enum(NFR_FORMATS, { error: `expected one of ${NFR_FORMATS.join(", ")}` }).default("markdown"),
});

/** The query's values, or invalid_request naming the field. */
export function parseNfrQuery(raw: { version?: string; format?: string }): { version?: number; format: NfrFormat } {
  const parsed = nfrQuerySchema.safeParse(Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined && v !== "")));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join(".") || "query";
    throw new ServiceError("invalid_request", `${field}: ${issue.message}`, { field });
  }
  return parsed.data;
}

/** The version's rows, for the page. */
export async function nfrPage(db: PrismaClient, version?: number): Promise<{ doc: CompiledPolicy; rows: NfrRow[] }> {
  const doc = await readPublishedVersion(db, version);
  return { doc, rows: await nfrRowsOf(doc) };
}

/** The version's document in a format, for the download (what `sluice nfr --format` prints). */
export async function nfrDownload(db: PrismaClient, raw: { version?: string; format?: string }): Promise<{ body: string; contentType: string; filename: string }> {
  const q = parseNfrQuery(raw);
  const doc = await readPublishedVersion(db, q.version);
  const ext = q.format === "markdown" ? "md" : q.format;
  const contentType = q.format === "csv" ? "text/csv" : q.format === "json" ? "application/json" : "text/markdown";
  return { body: await nfrDocument(doc, q.format), contentType: `${contentType}; charset=utf-8`, filename: `sluice-nfr-v${doc.version}.${ext}` };
}
