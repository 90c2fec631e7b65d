/**
 * Races a promise against a timer: rejects with `timeoutError()` after `ms`, else settles as the
 * promise does (a non-Error rejection wrapped in an Error). The promise itself is not cancelled.
 *
 * The timer is judged after the event loop's next I/O phase: timers run before I/O, so after this
 * process was busy (or descheduled) for longer than `ms`, the answer may be sitting unread in a
 * socket while the timer fires. That is this process being slow, not the other side: the answer
 * is read first, and only a promise still pending then is timed out.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, timeoutError: () => Error, options: { unref?: boolean } = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        settled = true;
        reject(timeoutError());
      });
    }, ms);
    if (options.unref) timer.unref();
    promise.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/**
 * A deadline after which `expire` runs, judged like withTimeout (after the next I/O phase):
 * `expire` is skipped when `done()` already holds by then. Returns the cancel function.
 * One deadline can guard many waiters (the Redis store arms one per script call, not per request).
 */
export function deadline(ms: number, done: () => boolean, expire: () => void): () => void {
  const timer = setTimeout(() => setImmediate(() => done() || expire()), ms);
  return () => clearTimeout(timer);
}
