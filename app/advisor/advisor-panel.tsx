/**
 * The limit advisor (on /advisor): a plain GET form (tier × operation × scope, an optional
 * proposed limit) and, for the query, the per-subject peak rates of the last 30 days and what the
 * proposed limit would have denied (lib/services/justify/advisor.ts). Server-rendered: no script needed.
 */
import { ADVISOR_DAYS, spanLabel, type AdvisorResult, type Percentiles } from "@/lib/services/justify/advisor";
import { ADVISOR_SCOPES, ADVISOR_UNITS, type FieldError } from "@/lib/services/justify/justify-input";
import { num, pct } from "@/components/format-numbers";

export interface AdvisorFormValues {
  tier: string;
  operation: string;
  scope: string;
  limit: string;
  per: string;
}

const SCOPE_LABELS: Record<(typeof ADVISOR_SCOPES)[number], string> = {
  api_key: "per API key",
  tenant: "per tenant",
  global: "the whole tier",
  ip: "per client address",
};

function PercentileRow({ label, p, testId }: { label: string; p: Percentiles; testId: string }) {
  return (
    <tr data-testid={testId}>
      <td>{label}</td>
      <td className="text-right tabular-nums">{num(Math.round(p.p50))}</td>
      <td className="text-right tabular-nums">{num(Math.round(p.p95))}</td>
      <td className="text-right tabular-nums">{num(Math.round(p.p99))}</td>
      <td className="text-right tabular-nums">{num(Math.round(p.max))}</td>
    </tr>
  );
}

export function AdvisorPanel({
  values,
  tiers,
  operations,
  errors,
  result,
}: {
  values: AdvisorFormValues;
  tiers: string[];
  operations: string[];
  errors: FieldError[];
  result: AdvisorResult | null;
}) {
  const errorOf = (field: string) => errors.find((e) => e.field === field);
  const invalid = (field: string) => (errorOf(field) ? true : undefined);
  return (
    <div className="card flex flex-col gap-4" data-testid="advisor-panel">
      <form method="get" action="/advisor" className="grid grid-cols-2 gap-3 md:grid-cols-6 md:items-end" noValidate>
        <div>
          <label className="label" htmlFor="advisor-tier">
            Tier
          </label>
          <select id="advisor-tier" name="tier" className="input" defaultValue={values.tier} aria-invalid={invalid("tier")}>
            {tiers.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </div>
        <div>
          <label className="label" htmlFor="advisor-operation">
            Operation
          </label>
          <select id="advisor-operation" name="operation" className="input" defaultValue={values.operation} aria-invalid={invalid("operation")}>
            <option value="*">* (every operation)</option>
            {operations.map((o) => (
              <option key={o}>{o}</option>
            ))}
          </select>
        </div>
        <div>
          <label className="label" htmlFor="advisor-scope">
            Scope
          </label>
          <select id="advisor-scope" name="scope" className="input" defaultValue={values.scope} aria-invalid={invalid("scope")}>
            {ADVISOR_SCOPES.map((s) => (
              <option key={s} value={s}>
                {s} ({SCOPE_LABELS[s]})
              </option>
            ))}
          </select>
        </div>
        <div>
          <label className="label" htmlFor="advisor-limit">
            Proposed limit
          </label>
          <input id="advisor-limit" name="limit" className="input" inputMode="numeric" defaultValue={values.limit} placeholder="e.g. 100" aria-invalid={invalid("limit")} />
        </div>
        <div>
          <label className="label" htmlFor="advisor-per">
            per
          </label>
          <select id="advisor-per" name="per" className="input" defaultValue={values.per} aria-invalid={invalid("per")}>
            {ADVISOR_UNITS.map((u) => (
              <option key={u}>{u}</option>
            ))}
          </select>
        </div>
        <button type="submit" className="btn-primary">
          Advise
        </button>
      </form>
      {errors.length > 0 && (
        <ul role="alert" className="text-sm text-red-700" data-testid="advisor-errors">
          {errors.map((e) => (
            <li key={`${e.field}:${e.message}`}>
              {e.text}
            </li>
          ))}
        </ul>
      )}
      {result && <AdvisorResultView r={result} />}
    </div>
  );
}

function AdvisorResultView({ r }: { r: AdvisorResult }) {
  const scope = r.query.scope;
  return (
    <div className="flex flex-col gap-3" data-testid="advisor-result">
      <p className="text-sm">
        Tier <strong>{r.query.tier}</strong>, operation <strong>{r.query.operation}</strong>, scope <strong>{scope}</strong>: {num(r.subjects)} subject{r.subjects === 1 ? "" : "s"},{" "}
        {num(Math.round(r.requests))} requests over the last 30 days ({r.minuteDays >= ADVISOR_DAYS ? "all of them by the minute" : r.minuteDays > 0 ? `the last ${spanLabel(r.minuteDays * 86_400_000)} by the minute, the rest by the hour` : "by the hour only: no minute rows"}).
      </p>
      <div className="overflow-x-auto">
        <table className="table" data-testid="advisor-percentiles">
          <caption className="mb-1 text-left text-xs font-semibold uppercase text-slate-500">Per-subject peak rate, across subjects (nearest rank)</caption>
          <thead>
            <tr>
              <th />
              <th className="text-right">p50</th>
              <th className="text-right">p95</th>
              <th className="text-right">p99</th>
              <th className="text-right">max</th>
            </tr>
          </thead>
          <tbody>
            <PercentileRow label="requests per minute (busiest minute)" p={r.perMinute} testId="advisor-per-minute" />
            <PercentileRow label="requests per second (at least)" p={r.perSecondAtLeast} testId="advisor-per-second" />
          </tbody>
        </table>
      </div>
      {r.proposed && (
        <p className="rounded border border-indigo-200 bg-indigo-50 p-2 text-sm" data-testid="advisor-proposed">
          A limit of <strong>{num(r.proposed.limit)} per {r.proposed.per}</strong> would have denied <strong>{pct(r.proposed.deniedShare)}</strong> of last month&apos;s requests (
          {num(Math.round(r.proposed.deniedRequests))} of {num(Math.round(r.requests))}) and denied <strong>{num(r.proposed.subjectsDenied)}</strong> of {num(r.subjects)} subjects at least once.
        </p>
      )}
      {r.top.length > 0 && (
        <details>
          <summary className="cursor-pointer text-sm font-medium">Busiest subjects</summary>
          <table className="table mt-1" data-testid="advisor-top">
            <thead>
              <tr>
                <th>subject</th>
                <th className="text-right">peak per minute</th>
                <th className="text-right">requests</th>
              </tr>
            </thead>
            <tbody>
              {r.top.map((t) => (
                <tr key={t.subject}>
                  <td className="font-mono text-xs">{t.subject}</td>
                  <td className="text-right tabular-nums">{num(Math.round(t.peakPerMinute))}</td>
                  <td className="text-right tabular-nums">{num(Math.round(t.requests))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
      <ul className="list-disc pl-5 text-xs text-slate-600" data-testid="advisor-notes">
        {r.notes.map((n) => (
          <li key={n}>{n}</li>
        ))}
      </ul>
    </div>
  );
}
