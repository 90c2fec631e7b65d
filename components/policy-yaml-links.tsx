/**
 * "Policy as YAML" on the Policy page: the draft and the live version as policy files, from
 * `GET /api/v1/policy/export` (a signed-in session is enough; no secrets: keys by name). The same
 * file `sluice export` prints for the draft; the live one is what decision servers enforce.
 */
export function PolicyYamlLinks({ liveVersion }: { liveVersion: number | null }) {
  return (
    <p className="mb-4 flex flex-wrap items-center gap-2 text-sm" data-testid="policy-yaml">
      <span className="text-slate-600">Policy as YAML:</span>
      <a className="btn" href="/api/v1/policy/export?version=draft" download="sluice-policy-draft.yaml" data-testid="policy-yaml-draft">
        Export the draft
      </a>
      {liveVersion !== null && (
        <a className="btn" href="/api/v1/policy/export?version=live" download={`sluice-policy-v${liveVersion}.yaml`} data-testid="policy-yaml-live">
          Export live v{liveVersion}
        </a>
      )}
      <span className="text-xs text-slate-500">
        Apply a file below (roles that edit the draft), or with <code>sluice apply -f FILE --dry-run</code> (or <code>POST /api/v1/policy/apply?dryRun=1</code>) to see its plan first.
      </span>
    </p>
  );
}
