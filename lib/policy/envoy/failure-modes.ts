/**
 * A domain's rule failure modes apart from the rest of its document. Failure modes are the SRE's
 * (`failure_mode.set`, lib/auth/permissions.ts) wherever they are written, and the role check sees
 * the fields of a plan's record: so the plan records a domain as its document without failure
 * modes plus `failureModes` (descriptor path → mode), and the writer joins them back.
 */
import { formatPath } from "../policy-file";
import type { FailureMode } from "../types";
import type { EnvoyDescriptorSpec, EnvoyDomainSpec } from "./schema";

/** `descriptors[0].descriptors[2]` → the mode its rate_limit names. */
export type EnvoyFailureModes = Record<string, FailureMode>;

export function splitFailureModes(domain: EnvoyDomainSpec): { document: EnvoyDomainSpec; failureModes: EnvoyFailureModes | undefined } {
  const modes: EnvoyFailureModes = {};
  const strip = (list: readonly EnvoyDescriptorSpec[], path: (string | number)[]): EnvoyDescriptorSpec[] =>
    list.map((d, i) => {
      const at = [...path, "descriptors", i];
      const copy: EnvoyDescriptorSpec = { ...d };
      if (d.rate_limit?.failureMode) {
        modes[formatPath(at)] = d.rate_limit.failureMode;
        const { failureMode: _mode, ...rest } = d.rate_limit;
        copy.rate_limit = rest;
      }
      if (d.descriptors) copy.descriptors = strip(d.descriptors, at);
      return copy;
    });
  const document: EnvoyDomainSpec = domain.descriptors ? { ...domain, descriptors: strip(domain.descriptors, []) } : { ...domain };
  return { document, failureModes: Object.keys(modes).length > 0 ? modes : undefined };
}

export function joinFailureModes(document: EnvoyDomainSpec, failureModes: EnvoyFailureModes | undefined): EnvoyDomainSpec {
  if (!failureModes) return document;
  const put = (list: readonly EnvoyDescriptorSpec[], path: (string | number)[]): EnvoyDescriptorSpec[] =>
    list.map((d, i) => {
      const at = [...path, "descriptors", i];
      const mode = failureModes[formatPath(at)];
      const copy: EnvoyDescriptorSpec = { ...d };
      if (mode && d.rate_limit) copy.rate_limit = { ...d.rate_limit, failureMode: mode };
      if (d.descriptors) copy.descriptors = put(d.descriptors, at);
      return copy;
    });
  return document.descriptors ? { ...document, descriptors: put(document.descriptors, []) } : document;
}
