/**
 * The operations page: create an operation, or replace one (patterns, cost, failure mode), in the
 * draft. Names are unique. The failure mode is a field like the others, and the role check of the
 * edit (lib/auth/permissions.ts) refuses a change of it to anyone without failure_mode.set.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { operationSchema } from "../../policy/policy-file";
import { editPolicy, parsePart, putNamed, type Editor } from "./edit-policy";

export async function saveOperation(
  db: PrismaClient,
  input: { originalName: string | null; operation: unknown },
  editor: Editor,
): Promise<{ name: string; changed: boolean }> {
  const operation = parsePart(operationSchema, input.operation);
  const result = await editPolicy(
    db,
    (draft, context) => {
      context.focus(["operations", putNamed(draft.spec.operations, input.originalName, operation, "operation")]);
      return draft;
    },
    editor,
  );
  return { name: operation.name, changed: result.applied };
}
