/** Delete a tier from the draft; refused while tenants are on it (move them first). */
import type { PrismaClient } from "../../generated/prisma/client";
import { editPolicy, type Editor } from "./edit-policy";
import { ServiceError } from "../errors";

export async function deleteTier(db: PrismaClient, input: { name: string }, editor: Editor): Promise<{ name: string; deleted: boolean }> {
  const result = await editPolicy(
    db,
    (draft) => {
      const users = draft.spec.tenants.filter((t) => t.tier === input.name).length;
      if (users > 0) {
        throw new ServiceError("invalid_request", `${users} tenant(s) are on ${input.name}; move them to another tier first`, { field: "name" });
      }
      const before = draft.spec.tiers.length;
      draft.spec.tiers = draft.spec.tiers.filter((t) => t.name !== input.name);
      return draft.spec.tiers.length === before ? null : draft;
    },
    editor,
  );
  return { name: input.name, deleted: result.applied };
}
