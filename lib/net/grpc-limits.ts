/**
 * What one client may hold on the gRPC port, and the one timer that enforces the time limits.
 * Without these a client that opens streams and never ends them holds up to 64 KiB per stream, on
 * up to 2^32−1 streams per connection, forever (3,000 streams took RSS from 130 to 410 MB). HTTP/2
 * itself refuses a stream past maxStreams (nghttp2: RST_STREAM REFUSED_STREAM); the session bytes
 * are counted from each message's announced length (worker/decision/grpc-message.ts); a call's
 * time ends with its message, after which the decision's own store budget bounds it.
 *
 * The time limits cost no timer per call: calls and connections sit in insertion-ordered sets
 * (a call's deadline is its start plus a constant, so the oldest expires first), and one sweep
 * every `sweepMs` ends what is due — at most `sweepMs` late.
 */

export interface GrpcLimits {
  /** Calls open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS). SLUICE_GRPC_MAX_STREAMS. */
  maxStreams: number;
  /** Request bytes one connection's unfinished calls may hold; a call past it is RESOURCE_EXHAUSTED. SLUICE_GRPC_MAX_SESSION_BYTES. */
  maxSessionBytes: number;
  /** From a call's HEADERS to the end of its message; past it the call is DEADLINE_EXCEEDED and its stream closed. SLUICE_GRPC_CALL_TIMEOUT_MS. */
  callTimeoutMs: number;
  /** A connection with no call open for this long is closed (GOAWAY). SLUICE_GRPC_IDLE_TIMEOUT_MS. */
  idleTimeoutMs: number;
}

/** The defaults (lib/env.ts holds the same numbers; lib/env.test.ts keeps them equal). */
export const DEFAULT_GRPC_LIMITS: Readonly<GrpcLimits> = Object.freeze({
  maxStreams: 100,
  maxSessionBytes: 1_048_576,
  callTimeoutMs: 5_000,
  idleTimeoutMs: 60_000,
});

/** A call the sweep may end: `expire` runs once, when it is still open at its deadline. */
export interface TimedCall {
  deadlineMs: number;
  expire(): void;
}

/** A connection the sweep may close: `idleSinceMs` is null while a call is open. */
export interface TimedSession {
  idleSinceMs: number | null;
  closeIdle(): void;
}

export class GrpcSweeper {
  private readonly calls = new Set<TimedCall>();
  private readonly sessions = new Set<TimedSession>();
  private timer: NodeJS.Timeout | null = null;
  /** How often the sweep runs: a tenth of the shorter limit, between 10 ms and 1 s. */
  readonly sweepMs: number;

  constructor(
    private readonly limits: Pick<GrpcLimits, "callTimeoutMs" | "idleTimeoutMs">,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.sweepMs = Math.max(10, Math.min(1_000, Math.floor(Math.min(limits.callTimeoutMs, limits.idleTimeoutMs) / 10)));
  }

  /** A new call; its deadline is now + callTimeoutMs. */
  addCall(call: Omit<TimedCall, "deadlineMs">): TimedCall {
    const timed = call as TimedCall;
    timed.deadlineMs = this.nowMs() + this.limits.callTimeoutMs;
    this.calls.add(timed);
    return timed;
  }

  removeCall(call: TimedCall): void {
    this.calls.delete(call);
  }

  addSession(session: TimedSession): void {
    this.sessions.add(session);
  }

  removeSession(session: TimedSession): void {
    this.sessions.delete(session);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.sweep(), this.sweepMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Ends the calls past their deadline (oldest first, so it stops at the first one that is not) and the idle connections. */
  sweep(): void {
    const now = this.nowMs();
    for (const call of this.calls) {
      if (call.deadlineMs > now) break;
      this.calls.delete(call);
      call.expire();
    }
    for (const session of this.sessions) {
      if (session.idleSinceMs !== null && now - session.idleSinceMs >= this.limits.idleTimeoutMs) {
        this.sessions.delete(session);
        session.closeIdle();
      }
    }
  }
}
