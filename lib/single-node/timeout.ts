/**
 * Every Postgres read of the single-node decision server races a timeout (docs/failure-modes.md
 * "PostgreSQL down": every database call has one): a stalled connection must not hold a poll forever. The query itself is not
 * cancelled; its late answer is ignored and the next poll asks again.
 */
import { withTimeout } from "../net/timeout";

export const QUERY_TIMEOUT_MS = 5_000;

export class QueryTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: no answer from PostgreSQL within ${ms} ms`);
  }
}

export function withQueryTimeout<T>(promise: Promise<T>, what: string, ms = QUERY_TIMEOUT_MS): Promise<T> {
  return withTimeout(promise, ms, () => new QueryTimeoutError(what, ms), { unref: true });
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
