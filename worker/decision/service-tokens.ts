/**
 * Service tokens: the callers of the decision API (`Authorization: Bearer <token>`, or
 * X-Sluice-Token on forward-auth). A token is accepted when sha256(token) is in the set publish
 * writes from the ApiToken table (Redis `keys.serviceTokens()`, or Postgres in single-node mode,
 * refreshed on every policy poll) or in SLUICE_SERVICE_TOKENS. The decision path never touches
 * Postgres. Every protocol adapter (HTTP, forward-auth, gRPC) asks the same `accepts`.
 *
 * A published token that is accepted is noted in a set (one Set.add); the server takes the set once
 * a minute and writes "last used" for those tokens off the decision path (server.ts).
 */
import { MAX_FIELD_CHARS } from "../../lib/decision/request";
import { sha256Hex } from "../../lib/redis/key-index";

function normalizeTokenHash(entry: string): string {
  const t = entry.trim();
  return /^[0-9a-f]{64}$/.test(t) ? t : sha256Hex(t);
}

export class ServiceTokens {
  private readonly fixed: Set<string>;
  /** Published from the ApiToken table; replaced whole on every refresh. */
  private published = new Set<string>();
  // sha256 of the few service tokens callers present, so a request does not hash its token again
  // (bounded: a caller cycling random tokens only ever fills it, then it is dropped).
  private readonly hashes = new Map<string, string>();
  /** Published tokens accepted since the last takeUsed(). */
  private used = new Set<string>();

  /** `fixed`: SLUICE_SERVICE_TOKENS entries, sha256 hex or plaintext. */
  constructor(fixed: readonly string[]) {
    this.fixed = new Set(fixed.filter((t) => t.trim() !== "").map(normalizeTokenHash));
  }

  replacePublished(hashes: Set<string>): void {
    this.published = hashes;
  }

  accepts(token: string | undefined): boolean {
    if (!token || token.length > MAX_FIELD_CHARS) return false;
    let hash = this.hashes.get(token);
    if (hash === undefined) {
      hash = sha256Hex(token);
      if (this.hashes.size >= 64) this.hashes.clear();
      this.hashes.set(token, hash);
    }
    if (this.published.has(hash)) {
      this.used.add(hash);
      return true;
    }
    return this.fixed.has(hash);
  }

  /** The published tokens accepted since the last call (sha256 hex), and a fresh set for the next. */
  takeUsed(): string[] {
    if (this.used.size === 0) return [];
    const taken = [...this.used];
    this.used = new Set();
    return taken;
  }
}
