/**
 * Guarded rollouts from the CLI (docs/control-plane.md#guarded-rollout):
 * `sluice publish --canary SLUG,SLUG --steps 10%:1h,100%` or `sluice publish --rollout FILE`
 * (publishRollout, called by `publish` when either is given), and
 * `sluice rollout status | promote | pause | abort`.
 */
import { readFile } from "node:fs/promises";
import { Command } from "commander";
import { parse as parseYaml } from "yaml";
import type { PrismaClient } from "../../lib/generated/prisma/client";
import type { RedisClient } from "../../lib/redis/client";
import { splitSteps } from "../../lib/policy/rollout";
import { ServiceError } from "../../lib/services/errors";
import { changeRollout, ROLLOUT_ACTIONS, rolloutStatus } from "../../lib/services/rollout/control-rollout";
import { formatRolloutStatus } from "../../lib/services/rollout/rollout-view";
import { formatApprovalPending } from "../../lib/services/approval/approval-view";
import { startRollout } from "../../lib/services/rollout/start-rollout";

export interface RolloutCommandDeps {
  database: () => PrismaClient;
  /** Throws when Redis is not configured; null in single-node mode. */
  redis: () => RedisClient | null;
  actor: () => string;
  write: (text: string) => void;
}

export interface PublishRolloutOptions {
  canary?: string;
  steps?: string;
  canaryBake?: string;
  rollout?: string;
  note?: string;
}

/** True when `publish` was given a rollout rather than "everyone". */
export function wantsRollout(opts: PublishRolloutOptions): boolean {
  return opts.canary !== undefined || opts.steps !== undefined || opts.rollout !== undefined || opts.canaryBake !== undefined;
}

async function readSpecFile(file: string): Promise<unknown> {
  const text = await readFile(file, "utf8").catch((e: NodeJS.ErrnoException) => {
    throw new ServiceError("invalid_request", `--rollout: cannot read ${file}: ${e.code === "ENOENT" ? "no such file" : e.message}`, { field: "rollout" });
  });
  try {
    // YAML is a superset of JSON: one parser reads both.
    return parseYaml(text) as unknown;
  } catch (error) {
    throw new ServiceError("invalid_request", `--rollout: ${file} is not YAML or JSON: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`, { field: "rollout" });
  }
}

/** `sluice publish` with `--canary/--steps` or `--rollout FILE`: starts the rollout and prints its status. */
export async function publishRollout(deps: RolloutCommandDeps, opts: PublishRolloutOptions): Promise<void> {
  let spec: unknown;
  if (opts.rollout !== undefined) {
    if (opts.canary !== undefined || opts.steps !== undefined || opts.canaryBake !== undefined) {
      throw new ServiceError("invalid_request", "--rollout: give the rollout either as a file or as --canary/--steps, not both", { field: "rollout" });
    }
    spec = await readSpecFile(opts.rollout);
    if (opts.note !== undefined && spec !== null && typeof spec === "object" && !Array.isArray(spec)) spec = { note: opts.note, ...spec };
  } else {
    if (opts.steps === undefined) throw new ServiceError("invalid_request", "--steps: required with --canary, e.g. --steps 10%:1h,100%", { field: "steps" });
    spec = {
      canaries: opts.canary === undefined ? [] : splitSteps(opts.canary),
      steps: splitSteps(opts.steps),
      ...(opts.canaryBake !== undefined ? { canaryBake: opts.canaryBake } : {}),
      ...(opts.note !== undefined ? { note: opts.note } : {}),
    };
  }
  const result = await startRollout({ db: deps.database(), redis: deps.redis() }, spec, { actor: deps.actor(), role: "admin" });
  if (result.status === "approval_pending") {
    deps.write(`${formatApprovalPending(result.approval)}\n`);
    return;
  }
  const view = result.rollout;
  deps.write(`Started rollout ${view.id}: v${view.candidateVersion} goes to the cohort first; v${view.liveVersion} stays live for everyone else.\n`);
  deps.write(`${formatRolloutStatus(view)}\n`);
}

export function rolloutCommand(deps: RolloutCommandDeps): Command {
  const cmd = new Command("rollout").description("the guarded rollout of a draft: status, promote, pause, abort");
  cmd
    .command("status")
    .description("the running rollout (else the last one): its step, cohort, guardrails and, after a rollback, why")
    .option("--json", "print it as JSON (the admin API's answer)")
    .action(async (opts: { json?: boolean }) => {
      const view = await rolloutStatus({ db: deps.database() });
      if (opts.json) deps.write(`${JSON.stringify({ rollout: view }, null, 2)}\n`);
      else deps.write(view ? `${formatRolloutStatus(view)}\n` : "No rollout yet. Start one with `sluice publish --canary SLUG,… --steps 10%:1h,100%`.\n");
    });
  const verbs: Record<(typeof ROLLOUT_ACTIONS)[number], string> = {
    promote: "move to the next step now (the last publishes the new version to everyone); resumes a paused rollout",
    pause: "stop advancing; the cohort keeps the new version",
    abort: "end the rollout: everyone back on the live version, the draft as it is",
  };
  for (const action of ROLLOUT_ACTIONS) {
    cmd
      .command(action)
      .description(verbs[action])
      .option("--reason <text>", "why (kept with the rollout and in the audit log)")
      .action(async (opts: { reason?: string }) => {
        const view = await changeRollout({ db: deps.database(), redis: deps.redis() }, action, { actor: deps.actor(), role: "admin", reason: opts.reason });
        deps.write(`${formatRolloutStatus(view)}\n`);
      });
  }
  return cmd;
}
