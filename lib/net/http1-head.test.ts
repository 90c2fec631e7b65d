/** lib/net/http1-head.ts: RFC 9112's request head, pure. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { headerValue, parseHead } from "./http1-head";

describe("parseHead", () => {
  it("reads the request line and headers, names lower-cased, values trimmed", () => {
    expect(parseHead("POST /v1/check HTTP/1.1\r\nHost: a\r\nX-Thing:  b c \t\r\nEmpty:")).toEqual({
      method: "POST",
      url: "/v1/check",
      minor: 1,
      headers: ["host", "a", "x-thing", "b c", "empty", ""],
    });
  });
  it.each([
    ["a space before the colon", "GET / HTTP/1.1\r\nHost : a"],
    ["obs-fold", "GET / HTTP/1.1\r\nHost: a\r\n b"],
    ["a bare LF", "GET / HTTP/1.1\r\nHost: a\nX: b"],
    ["a bare CR", "GET / HTTP/1.1\r\nHost: a\rX: b"],
    ["a control character", "GET / HTTP/1.1\r\nHost: a\u0000"],
    ["HTTP/2.0", "GET / HTTP/2.0"],
    ["two spaces", "GET  / HTTP/1.1"],
    ["a lower-case version", "GET / http/1.1"],
    ["no name", "GET / HTTP/1.1\r\n: a"],
  ])("refuses %s", (_what, text) => {
    expect(parseHead(text)).toBe("malformed");
  });
  it("agrees with the RFC 9112 grammar written as regular expressions, on random heads (property)", () => {
    // The reference: the grammar as regular expressions, one field line at a time.
    const FIELD = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[\t ]*((?:[\x21-\x7e\x80-\xff](?:[\t \x21-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?)[\t ]*$/;
    const reference = (text: string) => {
      const lines = text.split("\r\n");
      const line = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e\x80-\xff]+) HTTP\/1\.([01])$/.exec(lines[0]!);
      if (!line) return "malformed";
      const headers: string[] = [];
      for (const l of lines.slice(1)) {
        const m = FIELD.exec(l);
        if (!m) return "malformed";
        headers.push(m[1]!.toLowerCase(), m[2]!);
      }
      return { method: line[1], url: line[2], minor: line[3] === "1" ? 1 : 0, headers };
    };
    const char = fc.constantFrom("a", "Z", "-", ":", " ", "\t", "\r", "\n", "\u0000", "\u007f", "é", "\u00a0", "/", "\"", "1");
    const fieldLine = fc.oneof(
      fc.tuple(fc.constantFrom("Host", "content-length", "X-A", "Bad Name", ""), fc.constantFrom(":", " :", ""), fc.string({ unit: char, maxLength: 12 })).map(([n, c, v]) => `${n}${c}${v}`),
      fc.string({ unit: char, maxLength: 20 }),
    );
    fc.assert(
      fc.property(fc.array(fieldLine, { maxLength: 6 }), (lines) => {
        const text = ["POST /v1/check HTTP/1.1", ...lines].join("\r\n");
        expect(parseHead(text)).toEqual(reference(text));
      }),
      { numRuns: 3_000 },
    );
  });

  it("refuses more than maxHeaders header lines (headers_too_large), never dropping one", () => {
    expect(parseHead(`GET / HTTP/1.1${"\r\nX: y".repeat(3)}`, 3)).toMatchObject({ headers: ["x", "y", "x", "y", "x", "y"] });
    expect(parseHead(`GET / HTTP/1.1${"\r\nX: y".repeat(4)}`, 3)).toBe("headers_too_large");
  });
  it("joins repeats as node:http does, and keeps the first of single-valued names", () => {
    const h = ["x-forwarded-for", "1.1.1.1", "authorization", "Bearer a", "x-forwarded-for", "2.2.2.2", "authorization", "Bearer b"];
    expect(headerValue(h, "x-forwarded-for")).toBe("1.1.1.1, 2.2.2.2");
    expect(headerValue(h, "authorization")).toBe("Bearer a");
    expect(headerValue(h, "nope")).toBeUndefined();
  });
});
