/** The tiers page: replace the draft's global caps (one limit across all tenants per operation and window). */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { globalCapSchema } from "../../policy/policy-file";
import { editPolicy, parsePart, type Editor } from "./edit-policy";

const capsSchema = z.array(globalCapSchema).max(100);

export async function saveGlobalCaps(db: PrismaClient, input: { caps: unknown }, editor: Editor): Promise<{ changed: boolean }> {
  const caps = parsePart(capsSchema, input.caps);
  const result = await editPolicy(
    db,
    (draft, context) => {
      context.focus(["globalCaps"]);
      draft.spec.globalCaps = caps;
      return draft;
    },
    editor,
  );
  return { changed: result.applied };
}
