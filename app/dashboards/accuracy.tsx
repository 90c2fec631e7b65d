/** The dashboards' accuracy panel, loaded for the page's range (sre, admin: dashboards.read). */
import { AccuracyPanel } from "./accuracy-panel";
import { db } from "@/lib/db/client";
import { accuracyForRange } from "@/lib/services/observe/accuracy-dashboard";
import type { DashboardRange } from "@/lib/services/observe/usage-dashboard";

export async function DashboardAccuracy({ range, custom }: { range: DashboardRange; custom?: { fromMs: number; toMs: number } }) {
  const { rows } = await accuracyForRange(db(), range, undefined, custom);
  return <AccuracyPanel rows={rows} />;
}
