/** The admin API's documented answers are the services' result types: a drift fails tsc and this test. */
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { ErrorBody } from "../errors";
import type { ApplyFailureModesResult } from "../services/policy/apply-failure-modes";
import type { BillingPeriodSummary } from "../services/billing/billing-export";
import type { DiscardResult } from "../services/policy/discard-draft";
import type { PublishResult } from "../services/policy/publish-policy";
import type { RollbackResult } from "../services/policy/rollback-policy";
import type { RolloutView } from "../services/rollout/rollout-view";
import type { ApprovalView } from "../services/approval/approval-view";
import type { ApprovalOutcome } from "../services/approval/decide-approval";
import type { getQuotas, getTop, getUsage } from "../services/observe/usage-query";
import * as admin from "./admin";
import { openApiProblems } from "./validate";

describe("the admin API's OpenAPI schemas", () => {
  it("describe exactly what the route handlers answer", () => {
    expectTypeOf<z.infer<typeof admin.usageAnswerSchema>>().toEqualTypeOf<Awaited<ReturnType<typeof getUsage>>>();
    expectTypeOf<z.infer<typeof admin.topAnswerSchema>>().toEqualTypeOf<Awaited<ReturnType<typeof getTop>>>();
    expectTypeOf<z.infer<typeof admin.quotasAnswerSchema>>().toEqualTypeOf<Awaited<ReturnType<typeof getQuotas>>>();
    expectTypeOf<z.infer<typeof admin.billingPeriodSchema>>().toEqualTypeOf<BillingPeriodSummary>();
    expectTypeOf<z.infer<typeof admin.publishAnswerSchema>>().toEqualTypeOf<PublishResult>();
    expectTypeOf<z.infer<typeof admin.rollbackAnswerSchema>>().toEqualTypeOf<RollbackResult>();
    expectTypeOf<z.infer<typeof admin.discardAnswerSchema>>().toEqualTypeOf<DiscardResult>();
    expectTypeOf<z.infer<typeof admin.failureModesAnswerSchema>>().toEqualTypeOf<ApplyFailureModesResult>();
    expectTypeOf<z.infer<typeof admin.adminErrorSchema>>().toEqualTypeOf<ErrorBody>();
    expectTypeOf<z.infer<typeof admin.rolloutViewSchema>>().toEqualTypeOf<RolloutView>();
    expectTypeOf<z.infer<typeof admin.approvalViewSchema>>().toEqualTypeOf<ApprovalView>();
    expectTypeOf<z.infer<typeof admin.approvalOutcomeSchema>>().toEqualTypeOf<ApprovalOutcome>();
    expect(openApiProblems(admin.adminOpenApi())).toEqual([]);
  });
});
