/**
 * Service tokens given by SLUICE_SERVICE_TOKENS (comma-separated plaintexts or sha256 hex), as the
 * Settings page lists them: by the first 12 hex characters of their SHA-256, never by any part of
 * the secret. They are accepted by decision servers that have the variable, cannot be revoked in
 * the UI (remove them from the environment), and are not in the token table.
 */
import { hashSecret } from "./secrets";

export interface EnvServiceToken {
  /** First 12 hex characters of sha256(token). */
  fingerprint: string;
  /** How the variable gives it: as the plaintext or already as its sha256. */
  given: "plaintext" | "sha256";
}

export function envServiceTokens(value: string | undefined): EnvServiceToken[] {
  const seen = new Set<string>();
  const out: EnvServiceToken[] = [];
  for (const raw of (value ?? "").split(",")) {
    const t = raw.trim();
    if (!t) continue;
    const isHash = /^[0-9a-f]{64}$/.test(t);
    const fingerprint = (isHash ? t : hashSecret(t)).slice(0, 12);
    if (seen.has(fingerprint)) continue;
    seen.add(fingerprint);
    out.push({ fingerprint, given: isHash ? "sha256" : "plaintext" });
  }
  return out;
}
