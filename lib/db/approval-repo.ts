/**
 * Approval requests (prisma ApprovalRequest; docs/control-plane.md#approval), read back into typed
 * records: the JSON columns are parsed with zod, so a row that does not parse is an error naming
 * the column, never a request with a made-up diff.
 */
import { z } from "zod";
import type { ApprovalRequest } from "../generated/prisma/client";
import type { Db, Tx } from "./client";
import { APPROVAL_KINDS, APPROVAL_STATES, type ApprovalKind, type ApprovalState } from "../policy/approval";

export type { ApprovalKind, ApprovalState } from "../policy/approval";

const diffColumn = z.array(z.strictObject({ kind: z.enum(["added", "changed", "removed"]), entity: z.string(), text: z.string() }));
/** One line of the diff a requester saw (lib/policy/policy-diff.ts DiffLine, as stored). */
export type StoredDiffLine = z.output<typeof diffColumn>[number];

/** A request row with its enums and its diff typed. */
export interface ApprovalRecord extends Omit<ApprovalRequest, "kind" | "state" | "diff"> {
  kind: ApprovalKind;
  state: ApprovalState;
  diff: StoredDiffLine[];
}

export function toApprovalRecord(row: ApprovalRequest): ApprovalRecord {
  const kind = z.enum(APPROVAL_KINDS).safeParse(row.kind);
  const state = z.enum(APPROVAL_STATES).safeParse(row.state);
  const diff = diffColumn.safeParse(row.diff);
  if (!kind.success || !state.success || !diff.success) {
    const column = !kind.success ? "kind" : !state.success ? "state" : "diff";
    throw new Error(`approval request ${row.id}: column ${column} does not parse`);
  }
  return { ...row, kind: kind.data, state: state.data, diff: diff.data };
}

/** The one request waiting for a second person, or null. */
export async function findPendingApproval(db: Db | Tx): Promise<ApprovalRecord | null> {
  const row = await db.approvalRequest.findFirst({ where: { state: "pending" } });
  return row ? toApprovalRecord(row) : null;
}

export async function findApproval(db: Db | Tx, id: string): Promise<ApprovalRecord | null> {
  const row = await db.approvalRequest.findUnique({ where: { id } });
  return row ? toApprovalRecord(row) : null;
}

/** Requests, newest first; `state` narrows to one state. */
export async function listApprovalRecords(db: Db | Tx, options: { state?: ApprovalState; take?: number } = {}): Promise<ApprovalRecord[]> {
  const rows = await db.approvalRequest.findMany({
    where: options.state ? { state: options.state } : {},
    orderBy: [{ requestedAt: "desc" }, { id: "desc" }],
    take: options.take ?? 50,
  });
  return rows.map(toApprovalRecord);
}

/** An approved `rollout-step` request for this rollout's step (it lets the rollout enter it), or null. */
export async function findApprovedStep(db: Db | Tx, rolloutId: string, step: number): Promise<ApprovalRecord | null> {
  const row = await db.approvalRequest.findFirst({ where: { kind: "rollout-step", rolloutId, step, state: "approved" } });
  return row ? toApprovalRecord(row) : null;
}
