/**
 * `sluice webhooks set | list | remove` (where quota notifications go: a tenant's endpoint, or the
 * operator's with --operator; the signing secret is printed once) and `sluice notifications list |
 * resend` (every delivery with its status and attempts; a re-send queues the same event again).
 */
import { Command, Option } from "commander";
import type { PrismaClient } from "../../lib/generated/prisma/client";
import { currentEnv } from "../../lib/env";
import { listTenantNotifications, resendNotification } from "../../lib/services/billing/quota-notifications";
import { OPERATOR_SCOPE, removeWebhookEndpoint, setWebhookEndpoint } from "../../lib/services/billing/webhook-endpoints";

type Deps = { database: () => PrismaClient; actor: () => string; write: (text: string) => void };

const scopeOf = (opts: { tenant?: string; operator?: boolean }) => {
  if (!opts.tenant === !opts.operator) throw new Error("give --tenant <slug> or --operator");
  return opts.operator ? OPERATOR_SCOPE : opts.tenant!;
};

export function webhooksCommand(deps: Deps): Command {
  const out = (line: string) => deps.write(`${line}\n`);
  const webhooks = new Command("webhooks").description("quota notification endpoints: one per tenant, or the operator's");
  webhooks
    .command("set")
    .description("set an endpoint (https; checked like the alert webhook) and print its new signing secret once")
    .addOption(new Option("--tenant <slug>", "the tenant whose notifications go there").conflicts("operator"))
    .addOption(new Option("--operator", "the endpoint for tenants without their own"))
    .requiredOption("--url <url>", "the endpoint URL")
    .action(async (opts: { tenant?: string; operator?: boolean; url: string }) => {
      const allowPrivate = currentEnv("SLUICE_NOTIFY_ALLOW_PRIVATE") === "1";
      const e = await setWebhookEndpoint(deps.database(), { scope: scopeOf(opts), url: opts.url }, deps.actor(), { allowPrivate });
      out(`Endpoint for ${e.scope === OPERATOR_SCOPE ? "the operator" : `tenant ${e.scope}`}: ${e.url}. Signing secret (shown once, store it now):`);
      out(e.secret);
    });
  webhooks
    .command("list")
    .description("list endpoints (never their secrets)")
    .action(async () => {
      const rows = await deps.database().webhookEndpoint.findMany({ orderBy: { scope: "asc" } });
      if (rows.length === 0) out("No endpoints.");
      for (const r of rows) out(`${r.scope === OPERATOR_SCOPE ? "operator" : r.scope}  ${r.url}  set ${r.createdAt.toISOString()}`);
    });
  webhooks
    .command("remove")
    .description("remove an endpoint")
    .addOption(new Option("--tenant <slug>", "tenant").conflicts("operator"))
    .addOption(new Option("--operator", "the operator's endpoint"))
    .action(async (opts: { tenant?: string; operator?: boolean }) => {
      out((await removeWebhookEndpoint(deps.database(), scopeOf(opts), deps.actor())) ? "Removed." : "No such endpoint.");
    });
  return webhooks;
}

export function notificationsCommand(deps: Deps): Command {
  const out = (line: string) => deps.write(`${line}\n`);
  const notifications = new Command("notifications").description("quota notifications: deliveries and re-sends");
  notifications
    .command("list")
    .description("a tenant's notifications, newest first, with status and attempts")
    .requiredOption("--tenant <slug>", "tenant slug")
    .action(async (opts: { tenant: string }) => {
      const rows = await listTenantNotifications(deps.database(), opts.tenant);
      if (rows.length === 0) out("No notifications.");
      for (const n of rows) {
        const what = n.kind === "threshold" ? `${n.threshold}%` : "recovered";
        out(`${n.id}  ${what}  ${n.period}  ${n.used}/${n.limit}  ${n.status}  attempts ${n.attempts}${n.lastError ? `  ${n.lastError}` : ""}`);
      }
    });
  notifications
    .command("resend")
    .description("send a notification again (the same event, same id)")
    .requiredOption("--tenant <slug>", "tenant slug")
    .requiredOption("--id <id>", "notification id, as `notifications list` shows it")
    .action(async (opts: { tenant: string; id: string }) => {
      await resendNotification(deps.database(), opts, deps.actor(), Date.now());
      out(`Queued ${opts.id} again; the worker sends it within seconds.`);
    });
  return notifications;
}
