/**
 * `POST /json`'s bodies for the decision API's OpenAPI document: Envoy's RateLimitRequest and
 * RateLimitResponse as protobuf JSON (lib/rls/json.ts reads and writes them). Documented by their
 * JSON names; the parser also takes the proto names (`hits_addend`), as protobuf JSON parsers do.
 */
import { z } from "zod";

const UNITS = ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"] as const;
const CODES = ["OK", "OVER_LIMIT"] as const;
const uint32 = z.union([z.number().int().min(0).max(4_294_967_295), z.string().regex(/^\d+$/)]);
const header = z.object({ key: z.string(), value: z.string() });

export const rlsJsonRequestSchema = z
  .object({
    domain: z.string().meta({ description: "SLUICE_RLS_DOMAIN for Sluice's own descriptor keys; any other: the policy's rateLimitService section" }),
    descriptors: z
      .array(
        z.object({
          entries: z.array(z.object({ key: z.string(), value: z.string() })),
          limit: z.object({ requestsPerUnit: uint32, unit: z.enum(UNITS) }).optional().meta({ description: "Envoy's limit override (rateLimitService domains only)" }),
          hitsAddend: uint32.optional().meta({ description: "This descriptor's cost (a UInt64Value: its bare value)" }),
        }),
      )
      .max(100),
    hitsAddend: uint32.optional().meta({ description: "The cost of every descriptor without its own" }),
  })
  .meta({ description: "Envoy's RateLimitRequest as protobuf JSON (proto names accepted too; null is absent)" });

export const rlsJsonResponseSchema = z
  .object({
    overallCode: z.enum(CODES).optional(),
    statuses: z
      .array(
        z.object({
          code: z.enum(CODES).optional(),
          currentLimit: z.object({ name: z.string().optional(), requestsPerUnit: z.number().int().optional(), unit: z.enum(UNITS).optional() }).optional(),
          limitRemaining: z.number().int().optional(),
          durationUntilReset: z.string().regex(/^\d+s$/).optional().meta({ description: "A Duration: whole seconds, `42s`" }),
        }),
      )
      .optional(),
    responseHeadersToAdd: z.array(header).optional(),
    requestHeadersToAdd: z.array(header).optional(),
  })
  .meta({ description: "Envoy's RateLimitResponse as protobuf JSON: fields at their zero value left out" });
