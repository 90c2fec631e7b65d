/**
 * The one logger factory of every Sluice process (pino): JSON lines by default, one object per
 * line with `time` (ISO 8601), `level` (its name), `component` and `msg`; human-readable lines
 * when LOG_FORMAT=pretty (the demo sets it for itself and its children). LOG_LEVEL picks the
 * least severe level written (default info).
 *
 * Secrets never reach the output, whatever a caller passes:
 * - a field whose name says it holds one (authorization, x-api-key, x-sluice-token, cookie, key,
 *   apiKey, token, password, secret, … at any depth, in any case) is written as "[redacted]";
 * - strings (the message, every string field, an error's message and stack) lose what has the
 *   shape of one: `Bearer <credentials>`, Sluice keys and tokens (`sk_…`, `sl_svc_…`, `sl_adm_…`),
 *   and the password of a URL (`postgresql://user:[redacted]@host`).
 * Free text cannot be scrubbed of an arbitrary key an operator chose, so the rule stays: never put
 * a secret into a message; pass it as a field, if at all (lib/log.test.ts logs each kind and reads
 * the output).
 *
 * Logging is for events, not for traffic: the decision path writes nothing per allowed decision,
 * and denials are counted and written once per interval and reason (lib/decision/denial-log.ts).
 */
import pino, { type DestinationStream, type Logger, type LoggerOptions } from "pino";
import pretty from "pino-pretty";
import { currentEnv } from "./env";

export type { Logger } from "pino";

export const REDACTED = "[redacted]";

/** Field names (compared lower-case, without `-` and `_`) whose values are secrets. */
const SECRET_FIELDS = new Set(
  [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-sluice-token",
    "cookie",
    "set-cookie",
    "key",
    "apikey",
    "token",
    "servicetoken",
    "admintoken",
    "accesstoken",
    "refreshtoken",
    "password",
    "newpassword",
    "passwd",
    "secret",
    "nextauthsecret",
    "plaintext",
  ].map(normalizeField),
);

function normalizeField(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, "");
}

export function isSecretField(name: string): boolean {
  return SECRET_FIELDS.has(normalizeField(name));
}

const SECRET_SHAPES: [RegExp, string][] = [
  [/\b(Bearer|Basic)\s+[^\s"',;]+/gi, `$1 ${REDACTED}`],
  [/\b(?:sk|sl)_[A-Za-z0-9]+_[A-Za-z0-9_.-]{4,}/g, REDACTED],
  [/\b([a-z][a-z0-9+.-]*:\/\/[^:/\s@]*:)[^@\s/]+@/gi, `$1${REDACTED}@`],
];

/** A string without anything shaped like a secret. */
export function scrub(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_SHAPES) out = out.replace(pattern, replacement);
  return out;
}

function serializeError(error: Error): Record<string, unknown> {
  const out = pino.stdSerializers.err(error) as unknown as Record<string, unknown>;
  return redactValue(out, 0) as Record<string, unknown>;
}

/** A copy of `value` with secret fields replaced and strings scrubbed (depth-bounded). */
function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === "string") return scrub(value);
  if (value === null || typeof value !== "object") return value;
  if (depth > 8) return "[too deep]";
  if (value instanceof Error) return serializeError(value);
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = isSecretField(k) ? REDACTED : redactValue(v, depth + 1);
  return out;
}

export interface LoggerSettings {
  /** Where lines go (default stdout; the CLI uses stderr, since its stdout is data). */
  destination?: DestinationStream;
  /** Default: LOG_LEVEL. */
  level?: string;
  /** Default: LOG_FORMAT=pretty. */
  pretty?: boolean;
}

/** A logger for one process or component: `createLogger("decision")`. */
export function createLogger(component: string, settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? currentEnv("LOG_LEVEL"),
    base: { component },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      level: (label) => ({ level: label }),
      bindings: (bindings) => redactValue(bindings, 0) as Record<string, unknown>,
      log: (object) => redactValue(object, 0) as Record<string, unknown>,
    },
    serializers: {
      err: (error: unknown) => (error instanceof Error ? serializeError(error) : redactValue(error, 0)),
      msg: (message: unknown) => (typeof message === "string" ? scrub(message) : message),
    },
  };
  const usePretty = settings.pretty ?? currentEnv("LOG_FORMAT") === "pretty";
  const destination = settings.destination ?? process.stdout;
  const logger = usePretty
    ? pino(options, pretty({ destination, sync: true, singleLine: true, ignore: "pid,hostname,component", translateTime: "SYS:HH:MM:ss.l" }))
    : pino(options, destination);
  // pino applies formatters.bindings to the root's bindings only: a child's go through this.
  // Children inherit the property, and `this` is the logger being forked.
  const fork = logger.child;
  logger.child = function child(this: Logger, bindings, childOptions) {
    return fork.call(this, redactValue(bindings, 0) as typeof bindings, childOptions);
  } as typeof logger.child;
  return logger;
}

/** An error's message, scrubbed, for a log field or a one-line report. */
export function errorMessage(error: unknown): string {
  return scrub(error instanceof Error ? error.message : String(error));
}
