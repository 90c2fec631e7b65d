/**
 * `items` in the order `names` gives them (by `nameOf`); items it does not name keep their relative
 * order, after the named ones. Stable, and it drops nothing.
 */
export function orderByNames<T>(items: readonly T[], names: readonly string[], nameOf: (item: T) => string): T[] {
  const rank = new Map(names.map((n, i) => [n, i]));
  return items
    .map((item, i) => ({ item, i, r: rank.get(nameOf(item)) ?? names.length }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.item);
}
