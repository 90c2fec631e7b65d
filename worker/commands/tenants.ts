/**
 * `sluice tenants`: list tenants with their tier and billing; set a tenant's billing period
 * (`billing --tenant acme --anchor 2026-03-15 --time-zone America/Los_Angeles`, or `--utc` for the
 * UTC calendar month) and its notification thresholds (`thresholds --tenant acme --set 80,100`,
 * or `--default`). Each is one audited edit of the draft, live after `sluice publish`.
 */
import { Command, InvalidArgumentError, Option } from "commander";
import type { PrismaClient } from "../../lib/generated/prisma/client";
import { loadPolicyRows, rowsToSpec } from "../../lib/db/policy-repo";
import { setTenantBilling, setTenantThresholds } from "../../lib/services/policy/set-tenant-billing";

type Editor = { actor: string; role: "admin" };

function parsePercents(value: string): number[] {
  if (!/^\d+(,\d+)*$/.test(value)) throw new InvalidArgumentError(`--set: expected percents like 80,100, got ${JSON.stringify(value)}`);
  return value.split(",").map(Number);
}

export function tenantsCommand(deps: { database: () => PrismaClient; editor: () => Editor; write: (text: string) => void }): Command {
  const out = (line: string) => deps.write(`${line}\n`);
  const tenants = new Command("tenants").description("tenants: list them, set their billing period and notification thresholds (draft)");

  tenants
    .command("list")
    .description("list tenants with tier, status, billing and thresholds (the draft)")
    .action(async () => {
      const spec = rowsToSpec(await loadPolicyRows(deps.database()));
      if (spec.tenants.length === 0) out("No tenants.");
      for (const t of spec.tenants) {
        const billing = t.billing ? `anchor ${t.billing.anchor} ${t.billing.timeZone}` : "UTC calendar month";
        const thresholds = t.thresholds ? t.thresholds.map((p) => `${p}%`).join(",") : "tier's";
        out(`${t.slug}  tier ${t.tier}  ${t.status}  billing ${billing}  thresholds ${thresholds}`);
      }
    });

  tenants
    .command("billing")
    .description("set a tenant's billing period: month quotas run from the anchor's day of month at local midnight")
    .requiredOption("--tenant <slug>", "tenant slug")
    .addOption(new Option("--anchor <YYYY-MM-DD>", "billing anchor date (its day of month starts each period)").conflicts("utc"))
    .addOption(new Option("--time-zone <zone>", "IANA time zone, e.g. America/Los_Angeles").conflicts("utc"))
    .addOption(new Option("--utc", "back to the UTC calendar month (the default)"))
    .action(async (opts: { tenant: string; anchor?: string; timeZone?: string; utc?: boolean }) => {
      if (!opts.utc && (!opts.anchor || !opts.timeZone)) throw new Error("give --anchor and --time-zone, or --utc");
      const billing = opts.utc ? null : { anchor: opts.anchor!, timeZone: opts.timeZone! };
      const r = await setTenantBilling(deps.database(), { tenant: opts.tenant, billing }, deps.editor());
      if (!r.changed) out(`Tenant ${r.tenant}: billing unchanged.`);
      else out(`Tenant ${r.tenant}: billing ${billing ? `anchor ${billing.anchor} ${billing.timeZone}` : "UTC calendar month"} in the draft; its new period starts when you run \`sluice publish\`.`);
    });

  tenants
    .command("thresholds")
    .description("set a tenant's quota notification thresholds (percent of each quota), or go back to its tier's")
    .requiredOption("--tenant <slug>", "tenant slug")
    .addOption(new Option("--set <percents>", "comma-separated percents, e.g. 80,100").argParser(parsePercents).conflicts("default"))
    .addOption(new Option("--default", "use the tier's thresholds (or 80,100)"))
    .action(async (opts: { tenant: string; set?: number[]; default?: boolean }) => {
      if (!opts.set && !opts.default) throw new Error("give --set or --default");
      const r = await setTenantThresholds(deps.database(), { tenant: opts.tenant, thresholds: opts.set ?? null }, deps.editor());
      out(r.changed ? `Tenant ${r.tenant}: thresholds ${opts.set ? opts.set.map((p) => `${p}%`).join(", ") : "from its tier"} in the draft; run \`sluice publish\`.` : `Tenant ${r.tenant}: thresholds unchanged.`);
    });
  return tenants;
}
