/** The cells of an audit entry, shared by the audit log and the overview's recent changes. */
import type { ReactNode } from "react";
import { formatTime } from "./ui";

export interface AuditEntryView {
  at: Date;
  actor: string;
  action: string;
  entity: string;
  entityId: string | null;
  /** The entity's name (lib/services/observe/audit-view.ts entityNames); the id is shown when absent. */
  name?: string;
}

/** Cells `at`, `actor`, `action`, `entity` of a DataTable row (the entity's id under it, truncated). */
export function auditCells(r: AuditEntryView): Record<"at" | "actor" | "action" | "entity", ReactNode> {
  return {
    at: formatTime(r.at),
    actor: r.actor,
    action: r.action,
    entity: (
      <>
        {r.entity}
        {r.name !== undefined ? (
          <div className="max-w-56 text-xs break-words text-slate-700" title={r.entityId ?? undefined} data-testid="audit-entity-name">
            {r.name}
          </div>
        ) : (
          r.entityId && (
            <div className="max-w-40 truncate font-mono text-xs text-slate-500" title={r.entityId}>
              {r.entityId}
            </div>
          )
        )}
      </>
    ),
  };
}
