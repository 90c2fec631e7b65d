/** `sluice portal-link --tenant acme --ttl 1h [--base-url URL]`: prints a signed, expiring customer portal URL. */
import { Command } from "commander";
import type { PrismaClient } from "../../lib/generated/prisma/client";
import { currentEnv } from "../../lib/env";
import { createPortalLink } from "../../lib/services/billing/portal-link";

export function portalLinkCommand(deps: { database: () => PrismaClient; write: (text: string) => void; nowMs: () => number }): Command {
  return new Command("portal-link")
    .description("print a signed, expiring link to a page showing one tenant's limits and quotas (no login)")
    .requiredOption("--tenant <slug>", "tenant slug")
    .option("--ttl <duration>", "how long the link works, 1m to 30d", "1h")
    .option("--base-url <url>", "the control plane's public URL (default NEXTAUTH_URL, else http://localhost:3000)")
    .action(async (opts: { tenant: string; ttl: string; baseUrl?: string }) => {
      const baseUrl = opts.baseUrl ?? currentEnv("NEXTAUTH_URL") ?? "http://localhost:3000";
      const link = await createPortalLink(deps.database(), { tenant: opts.tenant, ttl: opts.ttl, baseUrl }, deps.nowMs());
      deps.write(`${link.url}\n`);
      process.stderr.write(`Valid until ${link.expiresAt} for tenant ${link.tenant}.\n`);
    });
}
