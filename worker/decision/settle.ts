/**
 * POST /v1/settle (docs/decision-api.md "Settling a reserved cost"): gives back the difference
 * between the cost a `reserve: true` check committed and the cost the work actually had, once.
 * The same reservationId and actualCost again answers the same, with `replayed: true`; another
 * actualCost after settling is 409 `conflict`; an id that is unknown or older than its 10 minutes
 * is 404 `unknown_reservation`. The HTTP adapter authenticates and reads the body; this maps the
 * parsed body to the answer.
 */
import type { DecisionEngine } from "../../lib/decision/engine";
import { parseSettleBody } from "../../lib/decision/request";
import { errorBody, ERROR_STATUS, type ErrorCode } from "../../lib/errors";

export interface RouteAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** The answer of a settle that happened (or was already made with this actual cost). */
export interface SettleAnswer {
  reservationId: string;
  reservedCost: number;
  actualCost: number;
  /** Units given back on every counter the reservation committed: max(0, reservedCost − actualCost). */
  refunded: number;
  /** This settle had been made before with the same actual cost: nothing more was refunded. */
  replayed: boolean;
}

const error = (code: ErrorCode, message: string, field?: string, headers?: Record<string, string>): RouteAnswer => ({
  status: ERROR_STATUS[code],
  body: errorBody(code, message, { field }),
  ...(headers ? { headers } : {}),
});

export async function settleRoute(engine: Pick<DecisionEngine, "settle">, body: unknown): Promise<RouteAnswer> {
  const parsed = parseSettleBody(body);
  if (!parsed.ok) return error("invalid_request", parsed.error.message, parsed.error.field);
  const { reservationId, actualCost } = parsed.value;
  let result;
  try {
    result = await engine.settle(reservationId, actualCost);
  } catch {
    // The store failed or did not answer in time (StoreTimeoutError): the settle may have run, and
    // the same settle again replays it.
    return error("store_unavailable", "the counter store did not answer; settle again with the same actualCost", undefined, { "Retry-After": "1" });
  }
  switch (result.status) {
    case "unknown":
      return error("unknown_reservation", "reservationId: no such reservation, or it expired (reservations live 10 minutes)", "reservationId");
    case "conflict":
      return error("conflict", `actualCost: this reservation was settled with actualCost ${result.actualCost} already`, "actualCost");
    case "settled":
    case "replayed": {
      const answer: SettleAnswer = {
        reservationId,
        reservedCost: result.reservedCost,
        actualCost: result.actualCost,
        refunded: result.refunded,
        replayed: result.status === "replayed",
      };
      return { status: 200, body: answer };
    }
  }
}
