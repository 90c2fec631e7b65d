/**
 * What a gRPC call's headers say, read as the unary server (./grpc-server.ts) needs it: its
 * deadline (`grpc-timeout`), whether it is gRPC with protobuf messages (`content-type`), and the
 * percent-encoding of a status's `grpc-message`
 * (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md).
 */
import { performance } from "node:perf_hooks";

const TIMEOUT_UNITS_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000_001 };
const TIMEOUT = /^(\d{1,8})([HMSmun])$/;

/** `grpc-message` is percent-encoded UTF-8: every byte outside printable ASCII, and `%`. */
export function encodeGrpcMessage(text: string): string {
  let plain = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return text;
  let out = "";
  for (const b of Buffer.from(text, "utf8")) out += b < 0x20 || b > 0x7e || b === 0x25 ? `%${b.toString(16).toUpperCase().padStart(2, "0")}` : String.fromCharCode(b);
  return out;
}

/** The call's deadline (performance.now() time), Infinity without one; null for a malformed header. */
export function deadlineOf(header: string | string[] | undefined): number | null {
  if (header === undefined) return Infinity;
  const m = TIMEOUT.exec(String(header).trim());
  if (!m) return null;
  return performance.now() + Number(m[1]) * TIMEOUT_UNITS_MS[m[2]!]!;
}

/** The content types of gRPC with protobuf messages (PROTOCOL-HTTP2.md: `application/grpc` [`+proto`]), parameters aside. */
export function isGrpcProto(contentType: string | undefined): boolean {
  if (contentType === "application/grpc") return true;
  if (typeof contentType !== "string") return false;
  const semicolon = contentType.indexOf(";");
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return type === "application/grpc" || type === "application/grpc+proto";
}
