/** Request bodies with a size cap, read as a stream so an oversized body is never buffered whole. */
import { ServiceError } from "../errors";

/** The admin API's cap: a policy file of a few thousand tenants fits comfortably. */
export const ADMIN_BODY_MAX_BYTES = 1024 * 1024;

export async function readBodyText(request: Request, maxBytes: number = ADMIN_BODY_MAX_BYTES): Promise<string> {
  const tooLarge = () => new ServiceError("payload_too_large", `the body is over ${maxBytes} bytes`);
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(all);
  } catch {
    throw new ServiceError("invalid_request", "the body is not valid UTF-8");
  }
}

/** Parses a JSON body; malformed JSON is a 400, not a crash. */
export async function readJsonBody(request: Request, maxBytes: number = ADMIN_BODY_MAX_BYTES): Promise<unknown> {
  const text = await readBodyText(request, maxBytes);
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new ServiceError("invalid_request", "the body is not valid JSON");
  }
}
