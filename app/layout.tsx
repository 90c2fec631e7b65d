import type { Metadata } from "next";
import type { ReactNode } from "react";
import "./globals.css";
import { DraftBadge } from "@/components/draft-badge";
import { diffPolicies } from "@/lib/policy/policy-diff";
import { Shell } from "@/components/shell";
import { pagesFor } from "@/lib/auth/pages";
import { currentPrincipal } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { bodyOf } from "@/lib/policy/compile";
import { readDraftState } from "@/lib/services/policy/draft-view";

export const metadata: Metadata = { title: "Sluice", description: "Multi-tenant rate-limit control plane" };
export const dynamic = "force-dynamic";

export default async function RootLayout({ children }: { children: ReactNode }) {
  const principal = await currentPrincipal();
  const draft = principal ? await readDraftState(db()) : null;
  const changes = draft?.draft ? diffPolicies(draft.live ? bodyOf(draft.live) : null, draft.draft).length : 0;
  return (
    <html lang="en">
      <body className="min-h-screen font-sans">
        {principal ? (
          <Shell principal={principal} pages={pagesFor(principal.role)}>
            <DraftBadge changes={changes} hasErrors={(draft?.issues.length ?? 0) > 0} liveVersion={draft?.live?.version ?? null} />
            {children}
          </Shell>
        ) : (
          children
        )}
      </body>
    </html>
  );
}
