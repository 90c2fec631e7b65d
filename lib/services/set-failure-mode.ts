/**
 * Failure modes (what a decision does when Redis cannot answer): the default of operations without
 * their own, and one operation's (null: back to the default). Draft: live after publish. Changing
 * one needs failure_mode.set (admin, sre), checked per field by the edit like every other field.
 */
import type { PrismaClient } from "../generated/prisma/client";
import type { FailureMode } from "../policy/types";
import { editPolicy, type Editor } from "./edit-policy";
import { ServiceError } from "./errors";

export async function setDefaultFailureMode(db: PrismaClient, input: { failureMode: FailureMode }, editor: Editor): Promise<{ changed: boolean }> {
  const result = await editPolicy(
    db,
    (draft) => {
      draft.spec.defaults = { ...draft.spec.defaults, failureMode: input.failureMode };
      return draft;
    },
    editor,
  );
  return { changed: result.applied };
}

export async function setOperationFailureMode(
  db: PrismaClient,
  input: { name: string; failureMode: FailureMode | null },
  editor: Editor,
): Promise<{ changed: boolean }> {
  const result = await editPolicy(
    db,
    (draft) => {
      const op = draft.spec.operations.find((o) => o.name === input.name);
      if (!op) throw new ServiceError("not_found", `no operation ${input.name}`, { field: "name" });
      if (input.failureMode === null) delete op.failureMode;
      else op.failureMode = input.failureMode;
      return draft;
    },
    editor,
  );
  return { changed: result.applied };
}
