/**
 * The decision API's documented answers are the server's types (a drift fails tsc and this test),
 * and the structural OpenAPI check rejects what OpenAPI 3.1 does not allow.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { DecisionAnswer } from "../decision/answer";
import type { DecisionRequest } from "../decision/engine";
import type { SettleAnswer } from "../../worker/decision/settle";
import { checkSchema, settleSchema } from "../decision/request";
import type { TenantUsageAnswer } from "../policy/tenant-usage-answer";
import { decisionAnswerSchema, decisionOpenApi, settleAnswerSchema, tenantUsageAnswerSchema } from "./decision";
import { openApiProblems, schemaProblems } from "./validate";

describe("the decision API's OpenAPI schemas", () => {
  it("describe exactly the server's request and answer types", () => {
    expectTypeOf<z.infer<typeof decisionAnswerSchema>>().toEqualTypeOf<DecisionAnswer>();
    expectTypeOf<z.infer<typeof settleAnswerSchema>>().toEqualTypeOf<SettleAnswer>();
    expectTypeOf<z.infer<typeof tenantUsageAnswerSchema>>().toEqualTypeOf<TenantUsageAnswer>();
    expectTypeOf<z.infer<typeof checkSchema>>().toEqualTypeOf<DecisionRequest>();
    expectTypeOf<z.infer<typeof settleSchema>>().toEqualTypeOf<{ reservationId: string; actualCost: number }>();
    expect(openApiProblems(decisionOpenApi())).toEqual([]);
  });
});

describe("openApiProblems", () => {
  const valid = () => ({
    openapi: "3.1.0",
    info: { title: "t", version: "1" },
    paths: { "/a/{id}": { get: { parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: { 200: { description: "ok" } } } } },
  });
  it("accepts a minimal valid document and names each problem of broken ones", () => {
    expect(openApiProblems(valid())).toEqual([]);
    const cases: [(d: ReturnType<typeof valid>) => void, RegExp][] = [
      [(d) => ((d as { openapi: string }).openapi = "3.0.3"), /^openapi: expected "3.1.x"/],
      [(d) => ((d.info as { title?: string }).title = undefined), /^info.title: required/],
      [(d) => ((d.paths["/a/{id}"].get as { responses: unknown }).responses = {}), /responses: at least one response/],
      [(d) => ((d.paths["/a/{id}"].get.responses as Record<string, unknown>)["200"] = {}), /responses.200.description: required/],
      [(d) => ((d.paths["/a/{id}"].get.responses as Record<string, unknown>)["2000"] = { description: "x" }), /responses.2000: a status code/],
      [(d) => (d.paths["/a/{id}"].get.parameters = []), /path parameter \{id\} is not declared/],
      [(d) => ((d.paths["/a/{id}"].get.parameters[0] as { required: boolean }).required = false), /must be required: true/],
      [(d) => ((d.paths["/a/{id}"].get as Record<string, unknown>).nonsense = 1), /get.nonsense: not an OpenAPI 3.1 field/],
      [(d) => ((d.paths["/a/{id}"].get.responses as Record<string, unknown>)["200"] = { $ref: "#/components/responses/Nope" }), /does not resolve/],
      [(d) => ((d.paths as Record<string, unknown>)["a"] = {}), /paths.a: a path starts with \//],
    ];
    for (const [breakIt, problem] of cases) {
      const d = valid();
      breakIt(d);
      const problems = openApiProblems(d);
      expect(problems.some((p) => problem.test(p)), `${problem} in ${JSON.stringify(problems)}`).toBe(true);
    }
  });
});

describe("schemaProblems", () => {
  it("checks types, required, enums, bounds, nested items and refs, and refuses keywords it does not know", () => {
    const doc = { components: { schemas: { N: { type: "integer", minimum: 0 } } } };
    const schema = { type: "object", properties: { n: { $ref: "#/components/schemas/N" }, s: { type: ["string", "null"], enum: ["a", null] }, l: { type: "array", items: { type: "boolean" }, maxItems: 2 } }, required: ["n"], additionalProperties: false };
    expect(schemaProblems(doc, schema, { n: 1, s: null, l: [true] })).toEqual([]);
    expect(schemaProblems(doc, schema, { s: "a" })).toEqual(["$.n: required"]);
    expect(schemaProblems(doc, schema, { n: -1 })).toEqual(["$.n: below 0"]);
    expect(schemaProblems(doc, schema, { n: 1.5 })).toEqual(["$.n: expected integer, got number"]);
    expect(schemaProblems(doc, schema, { n: 1, s: "b" })).toEqual(['$.s: expected one of ["a",null], got "b"']);
    expect(schemaProblems(doc, schema, { n: 1, l: [true, 1] })).toEqual(["$.l[1]: expected boolean, got integer"]);
    expect(schemaProblems(doc, schema, { n: 1, x: 1 })).toEqual(["$.x: no value is allowed"]);
    expect(schemaProblems(doc, { type: "string", format: "date-time", dependentSchemas: {} }, "x")).toEqual(["$: schema keyword dependentSchemas is not supported by this check"]);
  });
});
