/** Hostile policy documents, for the parser's and the apply route's bounds tests. */

/** `levels` levels of nine aliases each: 9^9 = 387 million strings once expanded at nine. */
export function aliasBomb(levels = 9): string {
  const names = "abcdefghijklmnopqrstuvwxyz".slice(0, levels).split("");
  let text = `${names[0]}: &${names[0]} [${Array(9).fill('"lol"').join(", ")}]\n`;
  for (let i = 1; i < names.length; i++) text += `${names[i]}: &${names[i]} [${Array(9).fill(`*${names[i - 1]}`).join(", ")}]\n`;
  return text;
}
