/**
 * What a form says when its input does not parse, in words a person reads: the field by the label
 * it has on screen ("Days to replay", not `days:`), and zod's built-in messages ("Too small:
 * expected number to be >=1") said as what to enter. Pure: pages, components and server actions
 * share it.
 */

/** zod's default messages (v4), rewritten; a message a schema wrote itself passes unchanged. */
const REWRITES: [RegExp, (m: RegExpExecArray) => string][] = [
  [/^Invalid input: expected \w+, received undefined$/, () => "required"],
  [/^Invalid input: expected (number|int)\b.*$/, () => "expected a number"],
  [/^Invalid input: expected string\b.*$/, () => "expected text"],
  [/^Invalid input: expected boolean\b.*$/, () => "expected yes or no"],
  [/^Too small: expected number to be >=?\s*(\S+)$/, (m) => `expected a number ≥ ${m[1]}`],
  [/^Too small: expected number to be >\s*(\S+)$/, (m) => `expected a number > ${m[1]}`],
  [/^Too big: expected number to be <=?\s*(\S+)$/, (m) => `expected a number ≤ ${m[1]}`],
  [/^Too small: expected string to have >=?\s*1 characters?$/, () => "required"],
  [/^Too small: expected string to have >=?\s*(\d+) characters?$/, (m) => `expected at least ${m[1]} characters`],
  [/^Too big: expected string to have <=?\s*(\d+) characters?$/, (m) => `expected at most ${m[1]} characters`],
  [/^Too small: expected array to have >=?\s*(\d+) items?$/, (m) => `expected at least ${m[1]}`],
  [/^Invalid option: expected one of (.*)$/, (m) => `expected one of ${m[1]!.replaceAll('"', "").split("|").join(", ")}`],
  [/^Invalid (?:ISO )?datetime$/i, () => "expected a date and time"],
  [/^Invalid string: must match pattern .*$/, () => "not in the expected form"],
  [/^Unrecognized keys?: (.*)$/, (m) => `not a field here: ${m[1]!.replaceAll('"', "")}`],
];

export function plainMessage(message: string): string {
  for (const [pattern, say] of REWRITES) {
    const m = pattern.exec(message);
    if (m) return say(m);
  }
  return message;
}

/** A field key as words when no label is known: `capacityPerSecond` → "capacity per second". */
function keyAsWords(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replaceAll("_", " ").toLowerCase();
}

/**
 * One issue as a sentence naming the field by its label: ("days", "expected 1 to 30 days") →
 * "Days to replay: expected 1 to 30 days". `labels` maps a field key (the path's last name) to the
 * label the form shows; an issue without a path is its message alone.
 */
export function issueInWords(issue: { path: string; message: string }, labels: Readonly<Record<string, string>> = {}): string {
  const text = plainMessage(issue.message);
  const key = issue.path.split(".").filter((p) => p !== "" && !/^\d+$/.test(p)).pop();
  if (!key) return text.charAt(0).toUpperCase() + text.slice(1);
  const label = labels[key] ?? keyAsWords(key);
  return `${label.charAt(0).toUpperCase()}${label.slice(1)}: ${text}`;
}
