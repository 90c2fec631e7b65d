import type { Metadata } from "next";
import type { ReactNode } from "react";
import "./globals.css";
import { Shell } from "@/components/shell";
import { pagesFor } from "@/lib/auth/pages";
import { currentPrincipal } from "@/lib/auth/session";

export const metadata: Metadata = { title: "Sluice", description: "Multi-tenant rate-limit control plane" };
export const dynamic = "force-dynamic";

export default async function RootLayout({ children }: { children: ReactNode }) {
  const principal = await currentPrincipal();
  return (
    <html lang="en">
      <body className="min-h-screen font-sans">
        {principal ? (
          <Shell principal={principal} pages={pagesFor(principal.role)}>
            {children}
          </Shell>
        ) : (
          children
        )}
      </body>
    </html>
  );
}
