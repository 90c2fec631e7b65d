/**
 * The one reader of `Authorization: Bearer <token>` (RFC 6750 §2.1; the scheme in any case, RFC
 * 9110 §11.1), for every server that takes a bearer token: the admin API (lib/http/admin-auth.ts),
 * the decision API's service token and forward-auth's API key (worker/decision/http.ts), and the
 * gRPC rate limit service's metadata (worker/decision/grpc.ts). The SDK (lib/client/http.ts) ships
 * alone and imports nothing of Sluice: it keeps its own copy of this grammar, held to it by
 * lib/auth/bearer.test.ts.
 *
 * The token is one run of visible ASCII; spaces or tabs may separate it from the scheme and follow
 * it, nothing else. Anything else — another scheme, no token, a space inside — is no bearer token.
 */

/** The token, or undefined when the header is absent or not `Bearer <token>`. */
export function bearerToken(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  // The spelling every client sends, "Bearer <token>", by the cheapest test (this runs on every
  // decision); any other spelling by the whole grammar.
  if (USUAL.test(header)) return header.slice(7);
  const match = BEARER.exec(header);
  return match === null ? undefined : match[1];
}

const USUAL = /^Bearer [\x21-\x7e]+$/;
const BEARER = /^[ \t]*bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;
