/**
 * The shape of the Envoy conformance suite (cases in ./cases.ts) and the one loop that runs a case
 * against any backend. Phase 1 runs it on the pure core (conformance.test.ts: `sluice import
 * envoy` → policy parse → compile → decideEnvoy over memory counters); a gRPC backend (a real
 * decision server, a @grpc/grpc-js client from Envoy's protos) implements `EnvoyBackend` and runs
 * the same cases unchanged.
 *
 * Time: a case starts at `CASE_START_MS` (a UTC midnight, so every unit's window starts there)
 * and each step says its second (`atS`, default the previous step's). A backend that cannot set
 * its clock (real Redis TIME) waits instead: cases that cross a window do it with `second` units,
 * and only steps with `reset` assert `duration_until_reset`.
 */
import type { EnvoyRequest, EnvoyResponse } from "../decide";
import type { ReportedUnit } from "../units";

/** 2026-12-07T00:00:00Z: a Monday midnight, the start of a minute, hour, day (and of no week: weeks start on Thursdays, as theirs). */
export const CASE_START_MS = Date.UTC(2026, 11, 7);

export interface ExpectedStatus {
  code: "OK" | "OVER_LIMIT";
  /** `[requests_per_unit, unit]` or with the rule's name; absent: no current_limit. */
  limit?: [number, ReportedUnit] | [number, ReportedUnit, string];
  remaining: number;
  /** duration_until_reset in seconds, asserted only when given. */
  reset?: number;
}

export interface EnvoyStep {
  /** Seconds after the case's start. */
  atS?: number;
  request: EnvoyRequest;
  /** Send it this many times; the expectation is of the last answer (default 1). */
  times?: number;
  expect: { overall: "OK" | "OVER_LIMIT"; statuses: ExpectedStatus[] } | { error: string };
}

export interface EnvoyConformanceCase {
  /** The behaviour, as a sentence. */
  name: string;
  /** Where envoyproxy/ratelimit shows it: `README example 3`, `test/config/wildcard.yaml`, … */
  source: string;
  /** Their config files, as written for their service. */
  configs: { name: string; text: string }[];
  mergeDomains?: boolean;
  steps: EnvoyStep[];
}

/** A config refused by `sluice import envoy` (and by their loader), naming file and path. */
export interface EnvoyRefusalCase {
  name: string;
  source: string;
  configs: { name: string; text: string }[];
  mergeDomains?: boolean;
  /** The refusal: the file, the path in it, and a part of the message. */
  refused: { file: string; path: string; message: RegExp };
}

export interface EnvoyBackend {
  /** Loads the policy file `sluice import envoy` printed (apply and publish, for a real server). */
  load(policyText: string): Promise<void>;
  /** One ShouldRateLimit at `atMs` after the case's start. */
  shouldRateLimit(request: EnvoyRequest, atMs: number): Promise<{ response: EnvoyResponse } | { error: string }>;
  /**
   * Optional: `n` of the same call whose answers nobody reads, in parallel where the backend can
   * (a step's `times` but the last; identical calls count the same in any order).
   */
  send?(request: EnvoyRequest, atMs: number, n: number): Promise<void>;
}

// ---- Builders, so a case reads like their tests

type Pair = [string, string];

/** A request of one domain; each argument is one descriptor's entries. */
export function req(domain: string, ...descriptors: Pair[][]): EnvoyRequest {
  return { domain, descriptors: descriptors.map((entries) => ({ entries: entries.map(([key, value]) => ({ key, value })) })) };
}

export const ok = (limit: ExpectedStatus["limit"], remaining: number, reset?: number): ExpectedStatus => ({ code: "OK", limit, remaining, ...(reset === undefined ? {} : { reset }) });
export const over = (limit: ExpectedStatus["limit"], reset?: number): ExpectedStatus => ({ code: "OVER_LIMIT", limit, remaining: 0, ...(reset === undefined ? {} : { reset }) });
/** No rule applies: OK, no current_limit, nothing remaining (theirs). */
export const NONE: ExpectedStatus = { code: "OK", remaining: 0 };
/** An `unlimited` rule: OK with 2³²−1 remaining and no current_limit. */
export const UNLIMITED: ExpectedStatus = { code: "OK", remaining: 4_294_967_295 };

export function overallOf(statuses: ExpectedStatus[]): "OK" | "OVER_LIMIT" {
  return statuses.some((s) => s.code === "OVER_LIMIT") ? "OVER_LIMIT" : "OK";
}

/** A step whose overall code follows from its statuses (every case without quota or global shadow mode). */
export function step(request: EnvoyRequest, statuses: ExpectedStatus[], options: { atS?: number; times?: number } = {}): EnvoyStep {
  return { ...options, request, expect: { overall: overallOf(statuses), statuses } };
}

/** The answer as the expectation states it: what the step asserts, nothing else. */
function comparable(response: EnvoyResponse, expected: ExpectedStatus[]): { overall: string; statuses: ExpectedStatus[] } {
  return {
    overall: response.overall_code,
    statuses: response.statuses.map((s, i) => {
      const out: ExpectedStatus = { code: s.code, remaining: s.limit_remaining };
      if (s.current_limit) {
        const l = s.current_limit;
        out.limit = l.name ? [l.requests_per_unit, l.unit, l.name] : [l.requests_per_unit, l.unit];
      }
      if (expected[i]?.reset !== undefined && s.duration_until_reset) out.reset = s.duration_until_reset.seconds;
      return out;
    }),
  };
}

export interface StepResult {
  label: string;
  /** The answer as the step states its expectation (an error as `{ error }`), and the expectation. */
  got: unknown;
  want: unknown;
}

/**
 * Runs every step of `c` on `backend` (already loaded), yielding each answer beside what the step
 * expects; the caller asserts they are equal (this kit stays free of any test runner).
 */
export async function* runSteps(c: EnvoyConformanceCase, backend: EnvoyBackend): AsyncGenerator<StepResult> {
  let atS = 0;
  for (const [index, s] of c.steps.entries()) {
    atS = s.atS ?? atS;
    let answer: Awaited<ReturnType<EnvoyBackend["shouldRateLimit"]>> | undefined;
    const times = s.times ?? 1;
    if (times > 1 && backend.send) await backend.send(s.request, atS * 1000, times - 1);
    for (let n = backend.send ? times - 1 : 0; n < times; n++) answer = await backend.shouldRateLimit(s.request, atS * 1000);
    const label = `${c.name}, step ${index + 1}`;
    if ("error" in s.expect) {
      const error = answer && "error" in answer ? answer.error : `(no error: ${JSON.stringify(answer)})`;
      yield { label, got: { error: error.includes(s.expect.error) ? s.expect.error : error }, want: { error: s.expect.error } };
      continue;
    }
    const got = answer && "response" in answer ? comparable(answer.response, s.expect.statuses) : answer;
    yield { label, got, want: { overall: s.expect.overall, statuses: s.expect.statuses } };
  }
}
