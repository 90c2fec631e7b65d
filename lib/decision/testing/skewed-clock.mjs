// TESTS ONLY (lib/processes/harness.ts `clockSkewMs`): preloaded with
// `node --import file:///…/skewed-clock.mjs?skewMs=N`, it moves this process's wall clock by N ms —
// Date.now(), new Date() and performance.timeOrigin — as a server whose clock is off would see it.
const skewMs = Number(new URL(import.meta.url).searchParams.get("skewMs") ?? 0);
if (skewMs !== 0) {
  const RealDate = Date;
  class SkewedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(RealDate.now() + skewMs);
      else super(...args);
    }
    static now() {
      return RealDate.now() + skewMs;
    }
  }
  globalThis.Date = SkewedDate;
  const origin = performance.timeOrigin + skewMs;
  Object.defineProperty(performance, "timeOrigin", { value: origin, configurable: true });
}
