/** The dashboards' accuracy panel, loaded for the page's range (sre, admin: dashboards.read). */
import { AccuracyPanel } from "./accuracy-panel";
import { db } from "@/lib/db/client";
import { accuracyForRange } from "@/lib/services/accuracy-dashboard";
import type { DashboardRange } from "@/lib/services/usage-dashboard";

export async function DashboardAccuracy({ range }: { range: DashboardRange }) {
  const { rows } = await accuracyForRange(db(), range);
  return <AccuracyPanel rows={rows} />;
}
