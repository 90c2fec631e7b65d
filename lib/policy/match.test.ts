import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CompiledOperation, CompiledPolicyBody } from "./compiled";
import { compileRoutes, normalizePath, resolveOperation, resolveOperationName, routeMatches } from "./match";

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
          const segs = normalizePath(r.slice(space + 1));
          const reference = d.routes.find((route) => (route.method === "*" || route.method === m) && routeMatches(route, segs));
          expect(resolveOperationName(d, r)).toBe(reference?.operation ?? null);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe("path variants resolve to the operation of the path they spell (issue #17)", () => {
  const widgets = doc([
    { name: "catch-all", match: ["* /**"] },
    { name: "widgets", match: ["GET /api/widgets", "GET /api/widgets/*"] },
    { name: "widget-write", match: ["POST /api/widgets/*"] },
    { name: "head-only", match: ["HEAD /api/gadgets"] },
    { name: "gadgets", match: ["GET /api/gadgets", "GET /api/gadgets/*"] },
  ]);

  it("every spelling a backend serves as GET /api/widgets is the widgets operation, never the catch-all", () => {
    const variants = [
      "GET /api/widgets",
      "GET /API/widgets",
      "GET /Api/Widgets",
      "GET /api/%77idgets",
      "GET /api/%57IDGETS",
      "GET /%61pi/widgets",
      "GET /api/./widgets",
      "GET /./api/widgets/.",
      "GET /api/x/../widgets",
      "GET /api/x/%2e%2e/widgets",
      "GET /api/x/%2E%2E/widgets",
      "GET /../api/widgets",
      "GET /api/widgets;x=1",
      "GET /api;v=2/widgets;jsessionid=abc",
      "GET /api//widgets/",
      "GET /api/widgets?x=1#f",
      "HEAD /api/widgets",
      "head /API/./widgets;x",
      "get /api/widgets",
    ];
    for (const v of variants) expect(resolveOperationName(widgets, v), v).toBe("widgets");
    expect(resolveOperationName(widgets, "HEAD /api/widgets/7")).toBe("widgets");
    expect(resolveOperationName(widgets, "POST /API/Widgets/7;x=1")).toBe("widget-write");
  });

  it("decodes once, keeps an encoded slash inside its segment, and keeps invalid escapes as written", () => {
    // %2577 is "%77" after one decoding: a literal segment "%77idgets", not "widgets".
    expect(resolveOperationName(widgets, "GET /api/%2577idgets")).toBe("catch-all");
    // An encoded slash is one segment "a/b", which `*` matches as one segment.
    expect(resolveOperationName(widgets, "GET /api/widgets/a%2Fb")).toBe("widgets");
    expect(normalizePath("/api/%zz/%ff%77/%E2%82%AC")).toEqual(["api", "%zz", "%ffw", "€"]);
    expect(normalizePath("/V1/./Orders;jsessionid=x/%34%32/../42?x")).toEqual(["v1", "orders", "42"]);
    expect(normalizePath("/..;/admin")).toEqual(["admin"]);
  });

  it("HEAD is matched like GET, and a pattern naming HEAD wins over GET for the same path", () => {
    expect(resolveOperationName(widgets, "HEAD /api/gadgets")).toBe("head-only");
    expect(resolveOperationName(widgets, "GET /api/gadgets")).toBe("gadgets");
    expect(resolveOperationName(widgets, "HEAD /api/gadgets/1")).toBe("gadgets");
    // GET is not matched like HEAD.
    expect(resolveOperationName(doc([{ name: "h", match: ["HEAD /x/*"] }]), "GET /x/1")).toBeNull();
    const wild = doc([
      { name: "get-wild", match: ["GET /x/*"] },
      { name: "head-wild", match: ["HEAD /x/*"] },
    ]);
    expect(resolveOperationName(wild, "HEAD /x/1")).toBe("head-wild");
    expect(resolveOperationName(wild, "GET /x/1")).toBe("get-wild");
  });

  it("patterns are matched case-insensitively too", () => {
    const d = doc([{ name: "orders", match: ["GET /V1/Orders/*"] }]);
    expect(resolveOperationName(d, "GET /v1/orders/1")).toBe("orders");
    expect(resolveOperationName(d, "GET /V1/ORDERS/1")).toBe("orders");
  });

  it("a spelled variant resolves exactly as its plain form (property)", () => {
    const segment = fc.constantFrom("a", "b", "c", "*", "**");
    const method = fc.constantFrom("GET", "POST", "HEAD", "*");
    const pattern = fc.tuple(method, fc.array(segment, { maxLength: 4 })).map(([m, segs]) => `${m} /${segs.join("/")}`);
    const ops = fc.array(fc.array(pattern, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 5 });
    // One plain segment and the ways of spelling it that a backend treats as the same.
    const spelled = fc.tuple(fc.constantFrom("a", "b", "c", "d"), fc.integer({ min: 0, max: 5 })).map(([seg, how]) => {
      const plain = seg;
      const variants = [plain, plain.toUpperCase(), `%${plain.charCodeAt(0).toString(16)}`, `${plain};m=1`, `./${plain}`, `zz/../${plain}`];
      return { plain, spelled: variants[how]! };
    });
    const request = fc.tuple(fc.constantFrom("GET", "POST", "HEAD"), fc.array(spelled, { maxLength: 4 }), fc.constantFrom("", "/", "?q=1", "//"));
    fc.assert(
      fc.property(ops, fc.array(request, { minLength: 1, maxLength: 10 }), (matches, requests) => {
        const d = doc(matches.map((match, i) => ({ name: `op${i}`, match })));
        for (const [m, segs, tail] of requests) {
          const plain = `${m} /${segs.map((s) => s.plain).join("/")}`;
          const variant = `${m.toLowerCase()} /${segs.map((s) => s.spelled).join("/")}${tail}`;
          expect(resolveOperationName(d, variant), variant).toBe(resolveOperationName(d, plain));
          if (m === "HEAD") {
            // HEAD answers as GET does unless a HEAD pattern claims the path.
            const head = resolveOperationName(d, plain);
            const viaGet = resolveOperationName(d, `GET /${segs.map((s) => s.plain).join("/")}`);
            if (!d.routes.some((r) => r.method === "HEAD")) expect(head).toBe(viaGet);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
