/**
 * `sluice approvals list | approve ID | reject ID --reason TEXT` (docs/control-plane.md#approval):
 * the requests for a second person that publishes and rollout steps beyond the approval rule's
 * blast radius wait for. The CLI acts as `cli:<os user>`, and the service refuses a request's own
 * author, so the CLI cannot approve what the same person asked for either.
 */
import { Command, Option } from "commander";
import { APPROVAL_STATES } from "../../lib/policy/approval";
import { formatApproval } from "../../lib/services/approval/approval-view";
import { approveRequest, listApprovals, rejectRequest } from "../../lib/services/approval/decide-approval";
import type { RolloutCommandDeps } from "./rollout";

export function approvalsCommand(deps: RolloutCommandDeps): Command {
  const cmd = new Command("approvals").description("requests for a second person's approval of a publish or a rollout step: list, approve, reject");
  cmd
    .command("list")
    .description("the requests, newest first (pending ones by default)")
    .addOption(new Option("--state <state>", "which requests").choices([...APPROVAL_STATES, "all"]).default("pending"))
    .option("--json", "print them as JSON (the admin API's answer)")
    .action(async (opts: { state: (typeof APPROVAL_STATES)[number] | "all"; json?: boolean }) => {
      const approvals = await listApprovals({ db: deps.database() }, opts.state === "all" ? {} : { state: opts.state });
      if (opts.json) deps.write(`${JSON.stringify({ approvals }, null, 2)}\n`);
      else if (approvals.length === 0) deps.write(`No ${opts.state === "all" ? "" : `${opts.state} `}approval requests.\n`);
      else deps.write(`${approvals.map(formatApproval).join("\n\n")}\n`);
    });
  cmd
    .command("approve")
    .description("approve a pending request and do what it asks (publish, start the rollout, or move it to the step); never its own author")
    .argument("<id>", "the request's id (apr_…)")
    .option("--reason <text>", "a note kept with the approval and in the audit log")
    .action(async (id: string, opts: { reason?: string }) => {
      const r = await approveRequest({ db: deps.database(), redis: deps.redis() }, id, { actor: deps.actor(), reason: opts.reason });
      const did = r.version !== null ? `v${r.version} is live for everyone` : r.rollout !== null ? `rollout ${r.rollout} goes on (\`sluice rollout status\`)` : "done";
      deps.write(`Approved ${r.approval.id} (${r.approval.action}, requested by ${r.approval.requestedBy}): ${did}.\n`);
    });
  cmd
    .command("reject")
    .description("reject a pending request: nothing is published")
    .argument("<id>", "the request's id (apr_…)")
    .requiredOption("--reason <text>", "why (kept with the request and in the audit log)")
    .action(async (id: string, opts: { reason: string }) => {
      const r = await rejectRequest({ db: deps.database() }, id, { actor: deps.actor(), reason: opts.reason });
      deps.write(`Rejected ${r.approval.id} (${r.approval.action}, requested by ${r.approval.requestedBy}): nothing was published.\n`);
    });
  return cmd;
}
