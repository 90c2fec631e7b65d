/**
 * The request syntax of lib/net/http1.ts, RFC 9112's grammar, pure (for tests too): the head, the
 * framing it declares, a chunk size line. The connection (http1-connection.ts) finds where each
 * ends and hands the text here.
 */
import { METHODS } from "node:http";
import { DEFAULT_HTTP_LIMITS } from "./http-server";

/** The parts of a request head. */
export interface Http1Head {
  method: string;
  url: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: number;
  /** [lower-case name, value, …] in the order sent (values without surrounding whitespace). */
  headers: string[];
}

/**
 * RFC 9112 §3: `method SP request-target SP HTTP-version`, the target visible characters and
 * obs-text. The method is one node:http knows (its parser refuses any other, so this server refuses
 * what node:http would: lib/net/http-differential.test.ts), but CONNECT: this server tunnels nothing.
 */
export const REQUEST_LINE = new RegExp(`^(${METHODS.filter((m) => m !== "CONNECT").join("|")}) ([\\x21-\\x7e\\x80-\\xff]+) HTTP/1\\.([01])$`);
// RFC 9110 §5: token characters, visible characters and obs-text.
export const FIELD_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[\t ]*((?:[\x21-\x7e\x80-\xff](?:[\t \x21-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?)[\t ]*$/;

/** Headers whose later copies node:http drops instead of joining (IncomingMessage.headers). */
const SINGLE_VALUED = new Set([
  "age", "authorization", "content-length", "content-type", "etag", "expires", "from", "host", "if-modified-since", "if-unmodified-since", "last-modified",
  "location", "max-forwards", "proxy-authorization", "referer", "retry-after", "server", "user-agent",
]);

/** Character classes of RFC 9110 §5.6.2 and §5.5 by char code (latin1): 1 tchar, 2 field-vchar (VCHAR, obs-text), 4 SP or HTAB. */
const CHAR_CLASS = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  const ch = String.fromCharCode(c);
  if (/[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(ch)) CHAR_CLASS[c]! |= 1;
  if ((c >= 0x21 && c <= 0x7e) || c >= 0x80) CHAR_CLASS[c]! |= 2;
  if (c === 0x20 || c === 0x09) CHAR_CLASS[c]! |= 4;
}
/** Lower-case names of the headers requests usually carry, by the spellings clients send (no toLowerCase per request). */
const KNOWN_NAMES = new Map<string, string>();
for (const name of ["Host", "Content-Type", "Content-Length", "Authorization", "Accept", "User-Agent", "Connection", "Accept-Encoding", "Transfer-Encoding", "Expect", "X-Forwarded-For", "X-Real-IP", "X-Request-Id", "X-Api-Key", "X-Sluice-Token", "X-Forwarded-Method", "X-Forwarded-Uri", "X-Original-Method", "X-Original-URI", "Keep-Alive"]) {
  KNOWN_NAMES.set(name, name.toLowerCase());
  KNOWN_NAMES.set(name.toLowerCase(), name.toLowerCase());
}

/**
 * Parses a request head (the text before the empty line, latin1-decoded): REQUEST_LINE, then field
 * lines as FIELD_LINE; anything else (a bare CR or LF, an obs-fold, a control character) is
 * `malformed`, and more than `maxHeaders` lines `headers_too_large`, never a silent drop (a dropped
 * Content-Length would frame the body as the next request). Field lines are scanned against
 * CHAR_CLASS rather than matched with FIELD_LINE: this runs once per request.
 */
export function parseHead(text: string, maxHeaders = DEFAULT_HTTP_LIMITS.maxHeaders): Http1Head | "malformed" | "headers_too_large" {
  let end = text.indexOf("\r\n");
  if (end === -1) end = text.length;
  const line = REQUEST_LINE.exec(text.slice(0, end));
  if (line === null) return "malformed";
  const headers: string[] = [];
  const n = text.length;
  let at = end + 2;
  while (at < n + 2 && end < n) {
    end = text.indexOf("\r\n", at);
    if (end === -1) end = n;
    // name: one or more tchar up to the colon
    let i = at;
    while (i < end && (CHAR_CLASS[text.charCodeAt(i)]! & 1) !== 0) i++;
    if (i === at || i === end || text.charCodeAt(i) !== 58) return "malformed";
    const nameEnd = i;
    // value: field-vchar, SP and HTAB only; leading and trailing SP/HTAB are not part of it
    i++;
    while (i < end && (CHAR_CLASS[text.charCodeAt(i)]! & 4) !== 0) i++;
    const valueStart = i;
    let valueEnd = i;
    for (; i < end; i++) {
      const cls = CHAR_CLASS[text.charCodeAt(i)]!;
      if ((cls & 2) !== 0) valueEnd = i + 1;
      else if ((cls & 4) === 0) return "malformed";
    }
    if (headers.length === 2 * maxHeaders) return "headers_too_large";
    const raw = text.slice(at, nameEnd);
    headers.push(KNOWN_NAMES.get(raw) ?? raw.toLowerCase(), text.slice(valueStart, valueEnd));
    at = end + 2;
  }
  return { method: line[1]!, url: line[2]!, minor: line[3] === "1" ? 1 : 0, headers };
}

/** A header's value as node:http's IncomingMessage.headers gives it: repeats joined by ", ", or the first for single-valued names. */
export function headerValue(headers: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] !== name) continue;
    if (value === undefined) value = headers[i + 1]!;
    else if (SINGLE_VALUED.has(name)) return value;
    else value += `, ${headers[i + 1]!}`;
  }
  return value;
}

/** How a request's body is framed, and what its head asks of the connection. */
export interface Http1Framing {
  /** Transfer-Encoding: chunked. */
  chunked: boolean;
  /** The Content-Length (0 without one). */
  length: number;
  keepAlive: boolean;
  /** Expect: `continue` (100-continue on HTTP/1.1), `other` (417), or null. */
  expect: "continue" | "other" | null;
}

const DIGITS = /^[0-9]{1,15}$/;

/**
 * The framing of a request from its head, or `malformed`: two Content-Lengths, a Content-Length
 * with a Transfer-Encoding, a transfer coding other than chunked, a length that is not digits, or
 * HTTP/1.1 without Host. Anything that could frame the body two ways is refused (request smuggling).
 */
export function frameRequest(head: Http1Head): Http1Framing | "malformed" {
  const { headers, minor } = head;
  let contentLength: string | undefined;
  let transferEncoding: string | undefined;
  let connection: string | undefined;
  let expect: string | undefined;
  let host = false;
  let upgrade = false;
  for (let i = 0; i < headers.length; i += 2) {
    switch (headers[i]) {
      case "upgrade":
        upgrade = true;
        break;
      case "content-length":
        if (contentLength !== undefined) return "malformed";
        contentLength = headers[i + 1]!;
        break;
      case "transfer-encoding":
        transferEncoding = transferEncoding === undefined ? headers[i + 1]! : `${transferEncoding}, ${headers[i + 1]!}`;
        break;
      case "connection":
        connection = connection === undefined ? headers[i + 1]! : `${connection}, ${headers[i + 1]!}`;
        break;
      case "expect":
        expect = expect === undefined ? headers[i + 1]! : `${expect}, ${headers[i + 1]!}`;
        break;
      case "host":
        host = true;
        break;
    }
  }
  if (minor === 1 && !host) return "malformed";
  let chunked = false;
  let length = 0;
  if (transferEncoding !== undefined) {
    if (contentLength !== undefined || transferEncoding.trim().toLowerCase() !== "chunked") return "malformed";
    chunked = true;
  } else if (contentLength !== undefined) {
    if (!DIGITS.test(contentLength)) return "malformed";
    length = Number(contentLength);
  }
  return {
    chunked,
    length,
    // After an upgrade request the bytes that follow are another protocol's (node:http reads no
    // further request from them either): it is answered, and the connection ends.
    keepAlive: (minor === 1 ? !hasToken(connection, "close") : hasToken(connection, "keep-alive")) && !(upgrade && hasToken(connection, "upgrade")),
    expect: expect === undefined ? null : minor === 1 && expect.toLowerCase() === "100-continue" ? "continue" : "other",
  };
}

const CHUNK_SIZE_LINE = /^([0-9A-Fa-f]{1,8})(?:[\t ]*;[\t \x21-\x7e\x80-\xff]*)?$/;
/** A chunk size line longer than this is refused before its end arrives. */
export const MAX_CHUNK_LINE = 1024;

/**
 * The size a chunk size line declares (extensions ignored), or -1 when it is not one: at most 8 hex
 * digits, so no size overflows (and any over 64 KiB is past every body limit anyway).
 */
export function chunkSize(line: string): number {
  const match = CHUNK_SIZE_LINE.exec(line);
  return match === null ? -1 : parseInt(match[1]!, 16);
}

/** Whether a comma-separated header (Connection) lists this token, any case. */
function hasToken(value: string | undefined, token: string): boolean {
  if (value === undefined) return false;
  for (const part of value.split(",")) if (part.trim().toLowerCase() === token) return true;
  return false;
}
