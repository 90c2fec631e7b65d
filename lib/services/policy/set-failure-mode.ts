/**
 * One operation's failure mode in the draft (null: back to the default), for those who edit the
 * draft (admin); live after publish. The default and every operation's are applied live, at once,
 * by lib/services/policy/apply-failure-modes.ts (Operations → Failure modes), the one control for SREs.
 * Changing one needs failure_mode.set, checked per field by the edit like every other field.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import type { FailureMode } from "../../policy/types";
import { editPolicy, type Editor } from "./edit-policy";
import { ServiceError } from "../errors";

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
