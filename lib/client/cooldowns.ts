/**
 * One cooldown per origin, shared by every `fetchWithRetry` call that uses the same registry (by
 * default: the whole process). When any call hears 429 or 503, the origin cools down for the wait
 * the server named (or the backoff chosen); calls to that origin wait it out instead of sending.
 * When the cooldown ends, exactly one call goes first (the probe); the others wait for its answer:
 * if it passes they all go, if it is limited again a new cooldown starts. So a burst of 429s turns
 * into one retry per cooldown, not a burst of retries.
 */
import type { Clock } from "./clock.js";

interface Gate {
  untilMs: number;
  /** The status that started the cooldown (429 or 503), for the answer of a call that cannot wait. */
  status: number;
  /** Set while one call tests whether the origin accepts requests again. */
  probe: { promise: Promise<void>; resolve: () => void } | null;
}

/** How an attempt ended, for the cooldown: limited again (with the wait), passed, or failed without an answer. */
export type TurnResult = { kind: "limited"; untilMs: number; status: number } | { kind: "passed"; nowMs: number } | { kind: "failed" };

export type Turn =
  | { kind: "go"; report(result: TurnResult): void }
  /** The origin stays cooled down past the caller's limit: it should not send at all. */
  | { kind: "late"; untilMs: number; status: number };

export class OriginCooldowns {
  private readonly gates = new Map<string, Gate>();

  /** Milliseconds this origin still cools down (0 when it does not). */
  remainingMs(origin: string, nowMs: number): number {
    const gate = this.gates.get(origin);
    return gate ? Math.max(0, gate.untilMs - nowMs) : 0;
  }

  /** Forgets every cooldown. */
  clear(): void {
    for (const gate of this.gates.values()) gate.probe?.resolve();
    this.gates.clear();
  }

  /**
   * Waits until a request to `origin` may be sent, but not past `limitAtMs`. The caller must
   * `report` how a "go" turn ended, exactly once (the next caller may be waiting for it).
   */
  async turn(origin: string, options: { limitAtMs: number; clock: Clock; signal?: AbortSignal }): Promise<Turn> {
    const { clock, limitAtMs, signal } = options;
    for (;;) {
      const gate = this.gates.get(origin);
      if (!gate) return this.go(origin, null);
      const nowMs = clock.now();
      if (gate.untilMs > nowMs) {
        if (gate.untilMs > limitAtMs) return { kind: "late", untilMs: gate.untilMs, status: gate.status };
        await clock.sleep(gate.untilMs - nowMs, signal);
        continue;
      }
      if (gate.probe) {
        if (nowMs >= limitAtMs) return { kind: "late", untilMs: nowMs, status: gate.status };
        await waitFor(gate.probe.promise, limitAtMs - nowMs, clock, signal);
        continue;
      }
      let resolve = () => {};
      const promise = new Promise<void>((r) => (resolve = r));
      gate.probe = { promise, resolve };
      return this.go(origin, gate);
    }
  }

  private go(origin: string, probing: Gate | null): Turn {
    let reported = false;
    return {
      kind: "go",
      report: (result) => {
        if (reported) return;
        reported = true;
        const gate = this.gates.get(origin);
        if (result.kind === "limited") {
          if (gate) {
            gate.untilMs = Math.max(gate.untilMs, result.untilMs);
            gate.status = result.status;
          } else this.gates.set(origin, { untilMs: result.untilMs, status: result.status, probe: null });
        } else if (result.kind === "passed" && gate !== undefined && gate === probing && gate.untilMs <= result.nowMs) {
          // The origin answers again (a cooldown another call started meanwhile would stay).
          this.gates.delete(origin);
        }
        if (probing?.probe) {
          const probe = probing.probe;
          probing.probe = null;
          probe.resolve();
        }
      },
    };
  }
}

/** Resolves when `promise` does or after `ms`, whichever is first (rejects if `signal` aborts). */
async function waitFor(promise: Promise<void>, ms: number, clock: Clock, signal?: AbortSignal): Promise<void> {
  const stop = new AbortController();
  const onAbort = () => stop.abort(signal!.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await Promise.race([promise, clock.sleep(ms, stop.signal).catch((e: unknown) => (signal?.aborted ? Promise.reject(e) : undefined))]);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    stop.abort();
  }
}

/** The registry `fetchWithRetry` uses unless given another: one per process (or page, or isolate). */
export const sharedCooldowns = new OriginCooldowns();
