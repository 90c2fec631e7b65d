/**
 * API keys and tokens: generated from 24 random bytes, stored as SHA-256 hex, shown once, listed by
 * a display prefix. SHA-256 (not a slow hash) is right here: the secrets are random and long, so
 * there is nothing to brute-force, and the decision path must look a key up in microseconds.
 */
import { createHash, randomBytes } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Characters of a secret kept as its display prefix (`sk_live_Ab3x`). */
export const DISPLAY_PREFIX_LENGTH = 12;

export function hashSecret(plaintext: string): string {
  return createHash("sha256").update(plaintext, "utf8").digest("hex");
}

export function displayPrefix(plaintext: string): string {
  return plaintext.slice(0, DISPLAY_PREFIX_LENGTH);
}

/** `<kind>_<32 base62 chars>` (about 190 bits). */
export function generateSecret(kind: string): string {
  const bytes = randomBytes(32);
  let out = "";
  for (const b of bytes) out += ALPHABET[b % 62];
  return `${kind}_${out}`;
}
