/**
 * ShouldRateLimit without its transport: one decoded RateLimitRequest in, one RateLimitResponse
 * (or why not) out, the same for gRPC (./grpc.ts) and `POST /json` (./http.ts). The `domain`
 * chooses the meaning of the descriptors:
 * - SLUICE_RLS_DOMAIN: Sluice's own entry keys (api_key, tenant, operation…; lib/rls/mapping.ts),
 *   each descriptor one decision of the engine, started in one turn so the store sends them as
 *   one call;
 * - any other: the policy's `rateLimitService` section (lib/envoy/engine.ts), answered as
 *   envoyproxy/ratelimit answers it — a domain it does not know is OK unless the section's
 *   `unknownDomain: error` refuses it.
 * Authentication is the transport's (it reads the token before this is called).
 */
import type { DecisionAnswer } from "../../lib/decision/answer";
import { NotReadyError, type DecisionRequest } from "../../lib/decision/engine";
import type { EnvoyDecider } from "../../lib/envoy/engine";
import { envoyRlsResponse } from "../../lib/rls/envoy-domains";
import { planRateLimit, rateLimitResponse } from "../../lib/rls/mapping";
import type { RlsRequestMessage, RlsResponseMessage } from "../../lib/rls/messages";

export interface RlsAnswerDeps {
  engine: { decide(request: DecisionRequest): Promise<DecisionAnswer>; release(leaseId: string): Promise<boolean> };
  envoy: Pick<EnvoyDecider, "decide"> | undefined;
  /** SLUICE_RLS_DOMAIN. */
  domain: string;
}

export type RlsResult =
  | { ok: true; response: RlsResponseMessage }
  /** `invalid`: the request (`field` as a protobuf JSON path reads, the message starting with it); `not_ready`: no policy loaded yet. Other failures throw. */
  | { ok: false; kind: "invalid" | "not_ready"; field: string | null; message: string };

const NOT_READY: RlsResult = Object.freeze({ ok: false, kind: "not_ready", field: null, message: "no policy loaded yet" });

/** NotReadyError is an answer (UNAVAILABLE); anything else a bug or broken infrastructure. */
function notReady(error: unknown): RlsResult {
  if (error instanceof NotReadyError) return NOT_READY;
  throw error;
}

/*
 * Written with `then`, not `async`/`await`: the chain is one promise per call over the engine's
 * (plus Promise.all's for several descriptors), where three async layers cost three more promises
 * and their microtasks per call on the gRPC hot path (#27).
 */
export function createRlsAnswer(deps: RlsAnswerDeps): (request: RlsRequestMessage) => Promise<RlsResult> {
  const { engine, envoy, domain } = deps;

  function respond(answers: readonly DecisionAnswer[]): RlsResult {
    const { response, leasesToRelease } = rateLimitResponse(answers);
    // The request is denied, so nobody will release what its other descriptors leased.
    for (const lease of leasesToRelease) void engine.release(lease).catch(() => undefined);
    return { ok: true, response };
  }

  function sluiceDomain(request: RlsRequestMessage): Promise<RlsResult> {
    const plan = planRateLimit(request, { domain });
    if (!plan.ok) return Promise.resolve({ ok: false, kind: "invalid", field: plan.error.field, message: plan.error.message });
    const { requests } = plan;
    // One descriptor (what an Envoy route usually sends): its decision alone. Several: started in
    // one turn, so the store coalesces them into one call.
    if (requests.length === 1) return engine.decide(requests[0]!).then((answer) => respond([answer]), notReady);
    return Promise.all(requests.map((r) => engine.decide(r))).then(respond, notReady);
  }

  function envoyDomain(decider: Pick<EnvoyDecider, "decide">, request: RlsRequestMessage): Promise<RlsResult> {
    return decider.decide(request).then((decision): RlsResult => {
      if (!decision.ok) return { ok: false, kind: "invalid", field: decision.error.field, message: decision.error.message };
      return { ok: true, response: envoyRlsResponse(decision.decided) };
    }, notReady);
  }

  return (request) => {
    try {
      return envoy && request.domain !== domain ? envoyDomain(envoy, request) : sluiceDomain(request);
    } catch (error) {
      // planRateLimit, or a decider that throws before its promise: the same answer as a rejection.
      return Promise.reject(error).then(undefined, notReady);
    }
  };
}
