import { describe, expect, it } from "vitest";
import nextConfig, { securityHeaders } from "@/next.config";

describe("control-plane response headers (next.config.ts)", () => {
  it("every path gets no framing, a same-origin CSP, a referrer policy and nosniff", async () => {
    const rules = await nextConfig.headers!();
    const all = rules.find((r) => r.source === "/:path*");
    expect(all, "one rule for every path").toBeDefined();
    const headers = Object.fromEntries(all!.headers.map((x) => [x.key.toLowerCase(), x.value]));
    expect(headers["x-frame-options"]).toBe("DENY");
    expect(headers["referrer-policy"]).toBe("strict-origin-when-cross-origin");
    expect(headers["x-content-type-options"]).toBe("nosniff");
    const csp = new Map(headers["content-security-policy"]!.split(";").map((d) => {
      const [name, ...values] = d.trim().split(/\s+/);
      return [name!, values] as const;
    }));
    expect(csp.get("frame-ancestors")).toEqual(["'none'"]);
    expect(csp.get("default-src")).toEqual(["'self'"]);
    expect(csp.get("object-src")).toEqual(["'none'"]);
    expect(csp.get("base-uri")).toEqual(["'self'"]);
    expect(csp.get("form-action")).toEqual(["'self'"]);
    // No third-party origin anywhere, and eval only for the dev server.
    for (const [name, values] of csp) for (const v of values) expect(v, name).toMatch(/^('self'|'none'|'unsafe-inline'|data:|blob:)$/);
    expect(securityHeaders(true).find((x) => x.key === "Content-Security-Policy")!.value).toContain("'unsafe-eval'");
  });
});
