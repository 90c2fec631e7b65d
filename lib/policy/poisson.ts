/** Poisson arrivals at `rate` per ms for `durationMs`, in ms from 0 (a seeded xorshift32 generator: the same run every time). */
export function poisson(rate: number, durationMs: number, seed: number): number[] {
  let x = seed >>> 0 || 1;
  const random = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) + 0.5) / 4_294_967_296;
  };
  const out: number[] = [];
  for (let t = -Math.log(random()) / rate; t < durationMs; t += -Math.log(random()) / rate) out.push(t);
  return out;
}
