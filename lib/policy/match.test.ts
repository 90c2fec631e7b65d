import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CompiledOperation, CompiledPolicyBody } from "./compiled";
import { compileRoutes, pathSegments, resolveOperation, resolveOperationName, routeMatches } from "./match";

function doc(operations: { name: string; match: string[] }[]): Pick<CompiledPolicyBody, "routes" | "operations"> {
  const ops: Record<string, CompiledOperation> = {};
  for (const o of operations) ops[o.name] = { name: o.name, cost: 1, failureMode: "open", match: o.match };
  return { operations: ops, routes: compileRoutes(operations) };
}

const policy = doc([
  { name: "catch-all", match: ["* /**"] },
  { name: "v1-any", match: ["GET /v1/**"] },
  { name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] },
  { name: "orders-write", match: ["POST /v1/orders", "PUT /v1/orders/*"] },
  { name: "order-special", match: ["GET /v1/orders/special"] },
  { name: "reviews", match: ["GET /v1/products/*/reviews"] },
  { name: "product-any", match: ["* /v1/products/*"] },
  { name: "export", match: ["POST /v1/exports"] },
]);

describe("resolveOperation", () => {
  it("matches * to exactly one segment", () => {
    expect(resolveOperationName(policy, "GET /v1/orders/42")).toBe("orders-read");
    expect(resolveOperationName(policy, "GET /v1/orders/42/items")).toBe("v1-any");
  });

  it("matches ** to the rest of the path, including nothing", () => {
    expect(resolveOperationName(policy, "DELETE /anything/at/all")).toBe("catch-all");
    expect(resolveOperationName(policy, "GET /v1")).toBe("v1-any");
  });

  it("prefers the most specific pattern whatever the file order", () => {
    expect(resolveOperationName(policy, "GET /v1/orders/special")).toBe("order-special");
    expect(resolveOperationName(policy, "GET /v1/products/7/reviews")).toBe("reviews");
    expect(resolveOperationName(policy, "GET /v1/products/7")).toBe("product-any");
    // A named method beats `*` for the same path shape.
    const d = doc([
      { name: "any-method", match: ["* /x/*"] },
      { name: "get-only", match: ["GET /x/*"] },
    ]);
    expect(resolveOperationName(d, "GET /x/1")).toBe("get-only");
    expect(resolveOperationName(d, "POST /x/1")).toBe("any-method");
  });

  it("distinguishes methods", () => {
    expect(resolveOperationName(policy, "POST /v1/orders")).toBe("orders-write");
    expect(resolveOperationName(policy, "GET /v1/orders")).toBe("orders-read");
    expect(resolveOperationName(policy, "post /v1/exports")).toBe("export");
  });

  it("ignores query strings and fragments and tolerates trailing and double slashes", () => {
    expect(resolveOperationName(policy, "GET /v1/orders/42?expand=items")).toBe("orders-read");
    expect(resolveOperationName(policy, "GET /v1/orders/")).toBe("orders-read");
    expect(resolveOperationName(policy, "GET /v1//orders/42/#top")).toBe("orders-read");
  });

  it("resolves a bare operation name directly, and nothing else", () => {
    expect(resolveOperation(policy, "export")?.name).toBe("export");
    expect(resolveOperation(policy, "nope")).toBeNull();
    expect(resolveOperation(policy, "constructor")).toBeNull();
    expect(resolveOperation(doc([{ name: "a", match: ["GET /a"] }]), "GET /b")).toBeNull();
  });

  it("answers the same whether the exact-path fast path or the pattern scan decides", () => {
    const d = doc([
      { name: "rest", match: ["GET /a/**"] },
      { name: "exact-any-method", match: ["* /a/b"] },
      { name: "one", match: ["GET /a/*"] },
    ]);
    expect(resolveOperationName(d, "GET /a/b")).toBe("exact-any-method");
    expect(resolveOperationName(d, "GET /a/c")).toBe("one");
    expect(resolveOperationName(d, "GET /a/c/d")).toBe("rest");
    expect(resolveOperationName(d, "GET /a")).toBe("rest");
  });

  it("orders routes most specific first", () => {
    const routes = compileRoutes([
      { name: "r", match: ["GET /v1/**", "GET /v1/*", "GET /v1/orders", "* /v1/orders"] },
    ]);
    expect(routes.map((r) => `${r.method} /${r.segments.join("/")}`)).toEqual([
      "GET /v1/orders",
      "* /v1/orders",
      "GET /v1/*",
      "GET /v1/**",
    ]);
  });
});

describe("resolveOperation fast paths", () => {
  it("answer exactly what a plain scan of the sorted routes answers (property)", () => {
    const segment = fc.constantFrom("a", "b", "c", "*", "**");
    const method = fc.constantFrom("GET", "POST", "*");
    const pattern = fc.tuple(method, fc.array(segment, { maxLength: 4 })).map(([m, segs]) => `${m} /${segs.join("/")}`);
    const ops = fc.array(fc.array(pattern, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 5 });
    const request = fc
      .tuple(fc.constantFrom("GET", "POST", "get"), fc.array(fc.constantFrom("a", "b", "c", "d"), { maxLength: 5 }), fc.constantFrom("", "/", "?q=1", "/?x"))
      .map(([m, segs, tail]) => `${m} /${segs.join("/")}${tail}`);
    fc.assert(
      fc.property(ops, fc.array(request, { minLength: 1, maxLength: 10 }), (matches, requests) => {
        const d = doc(matches.map((match, i) => ({ name: `op${i}`, match })));
        for (const r of requests) {
          const space = r.indexOf(" ");
          const m = r.slice(0, space).toUpperCase();
          const segs = pathSegments(r.slice(space + 1));
          const reference = d.routes.find((route) => (route.method === "*" || route.method === m) && routeMatches(route, segs));
          expect(resolveOperationName(d, r)).toBe(reference?.operation ?? null);
        }
      }),
      { numRuns: 500 },
    );
  });
});
