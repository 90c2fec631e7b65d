/**
 * Failures a use case reports: ServiceError and its code → status table live in lib/errors.ts (one
 * home, shared with the HTTP envelope, server actions and the decision server); services import
 * them from here for brevity. Plus the one wrapper for Redis writes.
 */
import { ServiceError } from "../errors";

export { invalidPolicy, ServiceError, type ErrorCode as ServiceErrorCode } from "../errors";

/**
 * Runs a Redis write; a failure becomes store_unavailable (503) naming what was being done. The
 * client library's own text (addresses, ports, command names) is kept as the error's cause, which
 * the surfaces log (lib/http/errors.ts, actionFailure), never put in the message a client is shown
 * (docs/security.md).
 */
export async function redisStep<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    throw new ServiceError("store_unavailable", `Redis is unavailable (${what}); nothing was changed`, { cause: error });
  }
}
