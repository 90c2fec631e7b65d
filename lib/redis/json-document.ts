/**
 * A JSON document kept in one Redis key and validated on every read (the rollout routing, the
 * regions' shares document): absent, valid, or invalid with the fields zod names.
 */
import type { z } from "zod";
import type { RedisClient } from "./client";

export type JsonDocumentResult<T> = { status: "none" } | { status: "ok"; value: T; text: string } | { status: "invalid"; message: string };

export async function readJsonDocument<S extends z.ZodType>(redis: RedisClient, key: string, schema: S): Promise<JsonDocumentResult<z.infer<S>>> {
  const text = await redis.get(key);
  if (text === null) return { status: "none" };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { status: "invalid", message: "not JSON" };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) return { status: "invalid", message: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") };
  return { status: "ok", value: parsed.data, text };
}
