/**
 * Capacity planning for a global cap (docs/proving.md): from what the
 * downstream can take and how busy it may be, the cap per window; and, under weighted fair share
 * (lib/policy/fair-share.ts), what each tier is guaranteed when every tenant contends at once.
 *
 * - cap = ⌊capacity (requests/s) × target utilisation × window (s)⌋ units per window.
 * - With every tenant active, a tenant of weight w is guaranteed ⌊cap × w / W⌋ units per window,
 *   W being the sum of the weights of all active tenants (each tenant counts its tier's weight);
 *   a tier gets its tenants' guarantees. Capacity nobody claims can be borrowed (work-conserving),
 *   so these are floors, not ceilings. A tier's tenants that are idle leave their share to others.
 * - The second view, one contending tenant per tier, is the share of a tier's busiest tenant when
 *   each tier has one.
 */
export interface CapacityInput {
  /** Requests per second the downstream can take. */
  capacityPerSecond: number;
  /** Fraction of it the cap may use, in (0, 1]. */
  utilisation: number;
  windowMs: number;
  tiers: { name: string; weight: number; tenants: number }[];
}

export interface TierShare {
  tier: string;
  weight: number;
  tenants: number;
  /** Everyone contends: each of its tenants is guaranteed this many units per window. */
  perTenant: number;
  /** … and the tier as a whole this many. */
  tierTotal: number;
  /** tierTotal / cap. */
  share: number;
  /** One tenant per tier contends: that tenant is guaranteed this many. */
  alonePerTier: number;
}

export interface CapacityPlan {
  cap: number;
  windowMs: number;
  tiers: TierShare[];
  /** Units per window no tenant is guaranteed (rounding): borrowable. */
  unallocated: number;
}

export type CapacityError = { field: keyof CapacityInput; message: string };

export function checkCapacityInput(input: CapacityInput): CapacityError | null {
  if (!Number.isFinite(input.capacityPerSecond) || input.capacityPerSecond <= 0) return { field: "capacityPerSecond", message: "expected a number of requests per second > 0" };
  if (!Number.isFinite(input.utilisation) || input.utilisation <= 0 || input.utilisation > 1) return { field: "utilisation", message: "expected a fraction in (0, 1], e.g. 0.7" };
  if (!Number.isInteger(input.windowMs) || input.windowMs < 1) return { field: "windowMs", message: "expected a window of at least 1 ms" };
  return null;
}

export function planCapacity(input: CapacityInput): CapacityPlan {
  const cap = Math.floor(input.capacityPerSecond * input.utilisation * (input.windowMs / 1000) + 1e-9);
  const everyone = input.tiers.reduce((s, t) => s + t.weight * t.tenants, 0);
  const onePerTier = input.tiers.filter((t) => t.tenants > 0).reduce((s, t) => s + t.weight, 0);
  const tiers = input.tiers.map((t) => {
    // Integer arithmetic as the fair share itself compares: ⌊cap × w / W⌋.
    const perTenant = everyone > 0 && t.tenants > 0 ? Math.floor((cap * t.weight) / everyone) : 0;
    const tierTotal = perTenant * t.tenants;
    return {
      tier: t.name,
      weight: t.weight,
      tenants: t.tenants,
      perTenant,
      tierTotal,
      share: cap > 0 ? tierTotal / cap : 0,
      alonePerTier: onePerTier > 0 && t.tenants > 0 ? Math.floor((cap * t.weight) / onePerTier) : 0,
    };
  });
  return { cap, windowMs: input.windowMs, tiers, unallocated: cap - tiers.reduce((s, t) => s + t.tierTotal, 0) };
}
