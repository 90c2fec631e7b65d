/**
 * The SDK's wire types are written out (it imports nothing from the server); this proves they are
 * the server's, at compile time (`tsc` fails on a drift) and at run time (vitest).
 */
import { describe, expectTypeOf, it } from "vitest";
import type { DecisionAnswer as ServerAnswer, ExplainedCheck as ServerCheck } from "../decision/answer";
import type { DecisionRequest as ServerRequest } from "../decision/engine";
import type { Reason as ServerReason } from "../policy/types";
import type { SettleAnswer as ServerSettleAnswer } from "../../worker/decision/settle";
import type { DecisionRequest, ExplainedCheck, Reason, SettleAnswer, WireAnswer } from "./types";

describe("the SDK's wire types equal the decision server's", () => {
  it("answer, request, reason and explained check", () => {
    expectTypeOf<WireAnswer>().toEqualTypeOf<ServerAnswer>();
    expectTypeOf<DecisionRequest>().toEqualTypeOf<ServerRequest>();
    expectTypeOf<Reason>().toEqualTypeOf<ServerReason>();
    expectTypeOf<ExplainedCheck>().toEqualTypeOf<ServerCheck>();
    expectTypeOf<SettleAnswer>().toEqualTypeOf<ServerSettleAnswer>();
  });
});
