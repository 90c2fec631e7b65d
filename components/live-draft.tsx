import type { ReactNode } from "react";

/**
 * One value as the live policy has it and as the draft has it: the value alone when they agree,
 * both side by side when they differ ("live free · draft pro"), "draft only" for what is not
 * published yet. Presentation only.
 */
export function LiveDraft({ live, draft, render = (v) => <span className="badge">{v}</span> }: { live: string | null; draft: string; render?: (value: string) => ReactNode }) {
  if (live === draft) return <>{render(draft)}</>;
  return (
    <span className="inline-flex flex-wrap items-center gap-1" data-testid="live-draft" title="The draft differs from the live policy until it is published">
      {live === null ? (
        <span className="text-xs text-slate-500">not live</span>
      ) : (
        <>
          <span className="text-xs text-slate-500">live</span>
          {render(live)}
        </>
      )}
      <span className="text-xs text-amber-800">· draft</span>
      <span className="rounded ring-1 ring-amber-400">{render(draft)}</span>
    </span>
  );
}
