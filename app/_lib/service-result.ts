/** Maps a service call to an ActionResult: ServiceError → its status and field, anything else rethrown. */
import type { ActionResult } from "@/lib/auth/action";
import { ServiceError } from "@/lib/services/errors";

export async function serviceResult<T, D = undefined>(
  call: () => Promise<T>,
  ok: (value: T) => { message: string; data?: D },
): Promise<ActionResult<D>> {
  try {
    const value = await call();
    const { message, data } = ok(value);
    return { ok: true, message, data };
  } catch (error) {
    if (error instanceof ServiceError) {
      const issues = error.issues.length
        ? error.issues.map((i) => ({ path: i.path, message: i.message }))
        : error.field
          ? [{ path: error.field, message: error.message }]
          : undefined;
      return { ok: false, status: error.status as 400, message: error.message, issues };
    }
    throw error;
  }
}
