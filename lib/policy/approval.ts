/**
 * Two-person approval of a publish (docs/control-plane.md#approval): what a request is about, the
 * states it goes through, and the policy file's `approval` block, which the compiled policy
 * carries (./compiled.ts). The rule that judges a change by that block: ./blast-radius.ts.
 */
import { z } from "zod";

/** What a request for approval is about: a publish to everyone, a rollout's start, or entering one of its steps. */
export const APPROVAL_KINDS = ["publish", "rollout", "rollout-step"] as const;
export type ApprovalKind = (typeof APPROVAL_KINDS)[number];
/** A request waits (`pending`) until approved, rejected, or superseded by a newer one (or its rollout's end). */
export const APPROVAL_STATES = ["pending", "approved", "rejected", "superseded"] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

/** The policy file's `approval` block. Present: publishes beyond the blast radius need a second person. */
export const approvalSchema = z.strictObject({
  /**
   * The blast radius in percent of tenants: a publish, or a rollout step, that puts changed limits
   * in front of more than this share needs approval. 0 (the default): any change that reaches a tenant.
   */
  beyondPercent: z.number({ error: "expected a percent from 0 to 100" }).min(0, "expected a percent from 0 to 100").max(100, "expected a percent from 0 to 100").default(0),
  /** Any change to a global cap needs approval, whatever its reach (default true). */
  globalCapChange: z.boolean({ error: "expected true or false" }).default(true),
  /** An admin (user, admin token or the CLI) may publish without a second person (default false). */
  adminBypass: z.boolean({ error: "expected true or false" }).default(false),
});
export type ApprovalSpec = z.input<typeof approvalSchema>;
export type ApprovalSettings = z.output<typeof approvalSchema>;
