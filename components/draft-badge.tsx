import Link from "next/link";

/**
 * The "unpublished changes" bar above every page: how many changes the draft holds against the
 * live version (the same count as the Policy page's publish button), or that it does not compile.
 * Nothing when the draft equals live.
 */
export function DraftBadge({ changes, hasErrors, liveVersion }: { changes: number; hasErrors: boolean; liveVersion: number | null }) {
  if (!hasErrors && changes === 0) return null;
  return (
    <div className="mb-4 flex flex-wrap items-center gap-2 rounded-md border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-900" data-testid="draft-badge" role="status">
      <span className="badge bg-amber-200 text-amber-900" data-testid="draft-badge-count">
        {hasErrors ? "draft has errors" : `${changes} unpublished change${changes === 1 ? "" : "s"}`}
      </span>
      <span className="min-w-0">
        {liveVersion !== null
          ? `The draft differs from live v${liveVersion}; decision servers enforce v${liveVersion} until it is published.`
          : "Nothing is published yet: decision servers enforce no policy."}
      </span>
      <Link href="/policy" className="ml-auto whitespace-nowrap text-indigo-700 hover:underline">
        Review draft →
      </Link>
    </div>
  );
}
