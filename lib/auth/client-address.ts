/**
 * The client address of a request to the control plane, for the sign-in lockout: read from the
 * forwarding header exactly as forward-auth does (`SLUICE_CLIENT_ADDRESS_HEADER`,
 * `SLUICE_TRUSTED_PROXY_HOPS`, `SLUICE_TRUSTED_PROXIES`; docs/security.md). `next start` sets
 * X-Forwarded-For to the socket's address only when the request has none, so without a proxy in
 * front that overwrites it the client chooses it: the per-account ceiling still holds then.
 */
import { clientAddressFromHeaders, parseTrustedProxies, type ClientAddressRules } from "../decision/client-address";
import { currentEnv } from "../env";

export function clientAddressRules(): ClientAddressRules {
  return {
    header: currentEnv("SLUICE_CLIENT_ADDRESS_HEADER"),
    trustedHops: currentEnv("SLUICE_TRUSTED_PROXY_HOPS"),
    trustedProxies: parseTrustedProxies(currentEnv("SLUICE_TRUSTED_PROXIES")),
  };
}

/** The canonical client address, or `unknown` (one shared subject) when the header names none. */
export function requestClientAddress(headers: Headers): string {
  return clientAddressFromHeaders((name) => headers.get(name) ?? undefined, clientAddressRules());
}
