/** Query strings of GET route handlers, parsed with zod: the typed value, or a 400 naming the field. */
import type { z } from "zod";
import { invalidRequest } from "./errors";

export function parseQuery<S extends z.ZodType>(schema: S, url: URL): z.infer<S> {
  const raw: Record<string, string> = {};
  for (const [k, v] of url.searchParams) raw[k] = v;
  const result = schema.safeParse(raw);
  if (!result.success) throw invalidRequest(result.error.issues, "query");
  return result.data;
}
