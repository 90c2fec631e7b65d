/** Delete an operation from the draft (refused by validation while limits, quotas or caps refer to it). */
import type { PrismaClient } from "../../generated/prisma/client";
import { editPolicy, type Editor } from "./edit-policy";

export async function deleteOperation(db: PrismaClient, input: { name: string }, editor: Editor): Promise<{ name: string; deleted: boolean }> {
  const result = await editPolicy(
    db,
    (draft) => {
      const before = draft.spec.operations.length;
      draft.spec.operations = draft.spec.operations.filter((o) => o.name !== input.name);
      return draft.spec.operations.length === before ? null : draft;
    },
    editor,
  );
  return { name: input.name, deleted: result.applied };
}
