/** Delete one tenant override (draft: live after the next publish). One edit of the draft. */
import type { PrismaClient } from "../../generated/prisma/client";
import { editPolicy, tenantIn, type Editor } from "./edit-policy";
import { overrideIndex } from "./upsert-tenant-override";

export async function deleteTenantOverride(
  db: PrismaClient,
  input: { tenant: string; id: string },
  editor: Editor,
): Promise<{ id: string }> {
  await editPolicy(
    db,
    (draft, context) => {
      // By id within this tenant: another tenant's override id answers 404, like a missing one.
      const index = overrideIndex(draft, context, input.tenant, input.id);
      tenantIn(draft, input.tenant).overrides.splice(index, 1);
      return draft;
    },
    editor,
  );
  return { id: input.id };
}
