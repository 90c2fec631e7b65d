/**
 * "A rollout is in progress" on the Overview and the Dashboards (docs/control-plane.md#guarded-rollout):
 * which versions answer whom, the step, and a link to the Policy page where it is driven. Renders
 * nothing when no rollout is running or paused. The page hands it the rollout as the admin API
 * shows it (lib/services/rollout/rollout-view.ts RolloutView, of which this reads the fields below).
 */
import Link from "next/link";

export interface RolloutBannerView {
  id: string;
  state: string;
  liveVersion: number;
  candidateVersion: number;
  stepLabel: string;
  cohort: { tenants: number; of: number };
  approval: { id: string } | null;
}

export function RolloutBanner({ rollout }: { rollout: RolloutBannerView | null }) {
  if (!rollout || (rollout.state !== "running" && rollout.state !== "paused")) return null;
  return (
    <div role="status" className="card mb-4 flex flex-wrap items-center gap-x-3 gap-y-1 border-indigo-300 bg-indigo-50 text-sm" data-testid="rollout-banner">
      <span className={`badge ${rollout.state === "paused" ? "bg-amber-100 text-amber-800" : "bg-indigo-100 text-indigo-800"}`}>rollout {rollout.state}</span>
      <span className="min-w-0 flex-1 break-words">
        v{rollout.candidateVersion} answers {rollout.cohort.tenants} of {rollout.cohort.of} tenants, v{rollout.liveVersion} everyone else — {rollout.stepLabel}
        {rollout.approval ? `; the next step waits for approval (${rollout.approval.id})` : ""}.
      </span>
      <Link href="/policy" className="whitespace-nowrap text-indigo-700 hover:underline">
        Watch it on the Policy page →
      </Link>
    </div>
  );
}
