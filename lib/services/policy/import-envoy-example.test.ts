/**
 * examples/gateways/envoy-ratelimit-import: an Envoy config that used envoyproxy/ratelimit, with
 * its descriptor config imported unchanged. The Envoy side asks for the domain the import brings,
 * with descriptor keys the config knows, and the answers are the config's.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compilePolicy } from "../../policy/compile";
import { decideEnvoy, EnvoyMemoryCounters } from "../../policy/envoy/memory";
import { importEnvoyConfigs } from "./import-envoy";
import { parsePolicyInput } from "./policy-input";

const EXAMPLE = path.resolve(import.meta.dirname, "../../../examples/gateways/envoy-ratelimit-import");
const CONFIG = path.join(EXAMPLE, "runtime/ratelimit/config/edge.yaml");

/** The descriptor keys Envoy's actions produce (their default keys, or the descriptor_key given). */
function actionKeys(envoy: unknown): { domain: string; keys: Set<string> } {
  const keys = new Set<string>();
  let domain = "";
  const walk = (v: unknown) => {
    if (!v || typeof v !== "object") return;
    const o = v as Record<string, unknown>;
    if (typeof o.domain === "string" && o.rate_limit_service) domain = o.domain;
    if (Array.isArray(o.actions)) {
      for (const a of o.actions as Record<string, Record<string, string>>[]) {
        if (a.remote_address) keys.add("remote_address");
        if (a.generic_key) keys.add(a.generic_key.descriptor_key ?? "generic_key");
        if (a.destination_cluster) keys.add("destination_cluster");
        if (a.request_headers) keys.add(a.request_headers.descriptor_key!);
      }
    }
    for (const child of Object.values(o)) walk(child);
  };
  walk(envoy);
  return { domain, keys };
}

describe("the Envoy gateway example with an imported envoyproxy/ratelimit config", () => {
  const imported = importEnvoyConfigs([{ name: CONFIG, text: readFileSync(CONFIG, "utf8") }]);
  if (!imported.ok) throw new Error(JSON.stringify(imported.issues));
  const parsed = parsePolicyInput(imported.text);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const service = compilePolicy({ ...parsed.value, tenants: [] }).rateLimitService;

  it("asks for the imported domain, with descriptor keys the config has", () => {
    const { domain, keys } = actionKeys(parse(readFileSync(path.join(EXAMPLE, "envoy.yaml"), "utf8")));
    expect(domain).toBe("edge");
    expect(service?.domains.map((d) => d.domain)).toEqual(["edge"]);
    const configKeys = new Set(service!.domains[0]!.descriptors.map((d) => d.key));
    for (const key of keys) expect(configKeys, key).toContain(key);
  });

  it("answers a sign-in as the config says: 5 a minute per address under 50 a second, and the blocked address never", () => {
    const counters = new EnvoyMemoryCounters();
    const signIn = (ip: string) =>
      decideEnvoy(service, { domain: "edge", descriptors: [{ entries: [{ key: "remote_address", value: ip }] }, { entries: [{ key: "generic_key", value: "login" }, { key: "remote_address", value: ip }] }] }, counters, Date.UTC(2026, 11, 7));
    for (let i = 0; i < 5; i++) expect(signIn("203.0.113.7")).toMatchObject({ ok: true, response: { overall_code: "OK" } });
    expect(signIn("203.0.113.7")).toMatchObject({ ok: true, response: { overall_code: "OVER_LIMIT", statuses: [{ code: "OK", limit_remaining: 44 }, { code: "OVER_LIMIT" }] } });
    expect(signIn("192.0.2.66")).toMatchObject({ ok: true, response: { overall_code: "OVER_LIMIT", statuses: [{ code: "OVER_LIMIT", current_limit: { requests_per_unit: 0 } }, { code: "OK" }] } });
  });
});
