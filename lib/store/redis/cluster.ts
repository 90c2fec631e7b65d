/**
 * Redis Cluster: a script may only touch one hash slot, and a global cap (`{g:<capId>}`) lives apart
 * from its tenant (`{t:<tenant>}`). A decision across slots stays all-or-nothing by reservation and
 * refund (docs/semantics.md): the global caps' slots are decided first, then the tenant's, one DECIDE
 * per slot (after a denial, as dry runs); if any denied, what the others committed is refunded.
 */
import { REFUND_LUA } from "../lua/refund";
import { FLAG } from "../lua/wire";
import type { CheckOutcome, LimitCheck, StoreDecision } from "../types";
import type { DecisionResult, UndoCommand } from "./codec";
import { type Loader, script } from "./loader";
import type { Reservations } from "./reservations";

const REFUND = script(REFUND_LUA);

/** The hash tag of a key (what Redis Cluster hashes), or the whole key when it has none. */
export function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open >= 0) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

export function spansSlots(checks: readonly LimitCheck[]): boolean {
  const first = hashTag(checks[0]!.key);
  for (let i = 1; i < checks.length; i++) if (hashTag(checks[i]!.key) !== first) return true;
  return false;
}

export interface ClusterDeps {
  /** One DECIDE call of one decision (its checks in one slot). */
  decide(checks: readonly LimitCheck[], cost: number, flags: number): Promise<DecisionResult>;
  loader: Loader;
  reservations: Reservations;
}

/** A decision whose checks span slots, all-or-nothing by reservation and refund (see above). */
export async function checkAcrossSlots(deps: ClusterDeps, checks: readonly LimitCheck[], cost: number, dryRun: boolean, reserve: boolean): Promise<StoreDecision> {
  const groups = new Map<string, number[]>();
  checks.forEach((c, i) => {
    const tag = hashTag(c.key);
    groups.set(tag, [...(groups.get(tag) ?? []), i]);
  });
  const home = checks.find((c) => c.kind !== "global");
  const homeTag = home ? hashTag(home.key) : null;
  const order = [...groups.keys()].filter((t) => t !== homeTag);
  if (homeTag !== null) order.push(homeTag);

  const outcomes: CheckOutcome[] = new Array(checks.length);
  const reserved: UndoCommand[][] = [];
  let allowed = true;
  let nowMs = 0;
  for (const tag of order) {
    const idx = groups.get(tag)!;
    const flags = (dryRun || !allowed ? FLAG.dryRun : 0) | (tag !== homeTag || reserve ? FLAG.undo : 0);
    const r = await deps.decide(idx.map((i) => checks[i]!), cost, flags);
    nowMs = Math.max(nowMs, r.nowMs);
    idx.forEach((i, j) => (outcomes[i] = r.outcomes[j]!));
    if (!r.allowed) allowed = false;
    else if (allowed && !dryRun) reserved.push(r.undo);
  }
  if (allowed && reserve && !dryRun) return { nowMs, allowed, outcomes, reservationId: await deps.reservations.record(nowMs, cost, reserved.flat()) };
  if (!allowed && reserved.length > 0) {
    // Take back what the allowing slots committed; their outcomes then show nothing consumed.
    await Promise.all(reserved.map((undo) => refund(deps.loader, undo)));
    return { nowMs, allowed, outcomes: await idleOutcomes(deps, checks, cost, outcomes) };
  }
  return { nowMs, allowed, outcomes };
}

/** REFUND of one DECIDE call's commit (one slot). */
async function refund(loader: Loader, undo: UndoCommand[]): Promise<void> {
  if (undo.length === 0) return;
  const keys: string[] = [];
  const args: string[] = [];
  for (const [name, key, ...rest] of undo) {
    keys.push(String(key));
    args.push(String(name), String(rest.length), ...rest.map(String));
  }
  await loader.run(REFUND, keys, args);
}

/** After a refund, the allowing checks as a dry run sees them (nothing consumed). */
async function idleOutcomes(deps: ClusterDeps, checks: readonly LimitCheck[], cost: number, outcomes: CheckOutcome[]): Promise<CheckOutcome[]> {
  return Promise.all(
    outcomes.map(async (o, i) => {
      if (!o.allowed) return o;
      const r = await deps.decide([checks[i]!], cost, FLAG.dryRun);
      const { leaseId: _lease, overage: _overage, ...rest } = o;
      return { ...rest, remaining: r.outcomes[0]!.remaining };
    }),
  );
}
