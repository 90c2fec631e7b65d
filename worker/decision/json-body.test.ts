import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseJsonBody } from "./json-body";

/** A JSON value as written: objects keep their entries as sent, duplicates and spellings included. */
type Written = { kind: "object"; entries: [spelling: string, key: string, value: Written][] } | { kind: "array"; items: Written[] } | { kind: "scalar"; text: string };

function write(value: Written): string {
  if (value.kind === "scalar") return value.text;
  if (value.kind === "array") return `[${value.items.map(write).join(",")}]`;
  return `{${value.entries.map(([spelling, , v]) => `${spelling}:${write(v)}`).join(", ")}}`;
}

/** The first key an object has twice, in document order, by the path decision API errors use. */
function firstDuplicate(value: Written, path = ""): string | null {
  if (value.kind === "scalar") return null;
  if (value.kind === "array") {
    for (let i = 0; i < value.items.length; i++) {
      const found = firstDuplicate(value.items[i]!, `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  const seen = new Set<string>();
  for (const [, key, v] of value.entries) {
    const at = path === "" ? key : `${path}.${key}`;
    if (seen.has(key)) return at;
    seen.add(key);
    const found = firstDuplicate(v, at);
    if (found !== null) return found;
  }
  return null;
}

// Few keys, so that duplicates are common; each with the spellings JSON allows for it.
const key = fc.constantFrom<[string, string]>(["\"a\"", "a"], ["\"\\u0061\"", "a"], ["\"b\"", "b"], ["\"cost\"", "cost"], ["\"c\\u006fst\"", "cost"], ["\"a:b\"", "a:b"], ["\"q\\\"\"", "q\""]);
const scalar = fc.constantFrom("1", "-2.5e3", "true", "null", "\"x\"", "\"::1\"", "\"a:b,c}\"", "\"\\\"{\\\"\"").map((text): Written => ({ kind: "scalar", text }));
const { value } = fc.letrec<{ value: Written }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalar,
    fc.array(tie("value"), { maxLength: 3 }).map((items): Written => ({ kind: "array", items })),
    fc.array(fc.tuple(key, tie("value")), { maxLength: 4 }).map((entries): Written => ({ kind: "object", entries: entries.map(([[spelling, k], v]) => [spelling, k, v]) })),
  ),
}));

describe("parseJsonBody", () => {
  it("refuses an object with a key twice, naming the first such key by its path, and passes any other JSON as JSON.parse reads it (property)", () => {
    fc.assert(
      fc.property(value, (v) => {
        const text = write(v);
        const parsed = parseJsonBody(Buffer.from(text));
        const duplicate = firstDuplicate(v);
        if (duplicate === null) expect(parsed).toEqual({ ok: true, value: JSON.parse(text) });
        else expect(parsed).toEqual({ ok: false, error: { field: duplicate, message: `${duplicate}: duplicate key` } });
      }),
      { numRuns: 5_000 },
    );
  });

  it.each([
    ['{"cost":1e9,"cost":1}', "cost"],
    ['{"requests":[{"key":"k"},{"key":"k","cost":2,"cost":1}]}', "requests[1].cost"],
    ['{"a":{"b":1,"b":2}}', "a.b"],
    ['{"\\u0063ost":1,"cost":2}', "cost"],
  ])("names the duplicate of %s", (text, field) => {
    expect(parseJsonBody(Buffer.from(text))).toEqual({ ok: false, error: { field, message: `${field}: duplicate key` } });
  });

  it("answers malformed JSON as before", () => {
    expect(parseJsonBody(Buffer.from("{not json"))).toEqual({ ok: false, error: { field: "", message: "body: malformed JSON" } });
  });
});
