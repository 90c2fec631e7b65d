/**
 * GraphQL cost against a real decision server and real Redis, with a real `graphql` schema: the
 * estimate (graphql-query-complexity) is reserved before execution, the difference to the cost the
 * result had is refunded once after it, and a query whose estimate is over the limit is denied 429
 * before its resolvers run.
 */
import { graphql, GraphQLInt, GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString, type ExecutionResult } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SluiceClient } from "./client";
import { checkQuery, queryCost, resultCost, runCostedQuery } from "./graphql";
import { type ClientTestServer, startDecisionServer } from "./testing/decision";

let sluice: ClientTestServer;
let client: SluiceClient;
/** How many times the `items` resolver ran. */
let executions = 0;

const Item = new GraphQLObjectType({
  name: "Item",
  fields: { id: { type: new GraphQLNonNull(GraphQLInt) }, name: { type: GraphQLString } },
});

/** `items(first: N)` is priced N × its selection (an upper bound); it returns at most 3. */
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: "Query",
    fields: {
      items: {
        type: new GraphQLList(Item),
        args: { first: { type: new GraphQLNonNull(GraphQLInt) } },
        extensions: { complexity: ({ args, childComplexity }: { args: { first: number }; childComplexity: number }) => args.first * childComplexity },
        resolve: (_root, args: { first: number }) => {
          executions++;
          return Array.from({ length: Math.min(3, args.first) }, (_, i) => ({ id: i, name: `item ${i}` }));
        },
      },
    },
  }),
});

const KEY = "sk_test_gql_a_0001";
const request = { key: KEY, operation: "POST /graphql" };

beforeAll(async () => {
  sluice = await startDecisionServer(["gql"], {
    operations: [{ name: "graphql", match: ["POST /graphql"] }],
    tiers: [{ name: "gql", limits: [{ operation: "graphql", scope: "tenant", algorithm: "sliding_window_log", limit: 50, window: "1h" }] }],
    tenants: [{ slug: "gql-a", name: "gql a", tier: "gql", keys: [{ name: "a", key: KEY }] }],
  });
  client = new SluiceClient({ url: sluice.url, token: sluice.token, timeoutMs: 2_000 });
});

afterAll(async () => {
  await sluice?.stop();
});

async function remaining(): Promise<number> {
  return (await client.check({ ...request, dryRun: true })).remaining;
}

const run = (source: string) => () => graphql({ schema, source }) as Promise<ExecutionResult>;

describe("GraphQL cost: reserve the estimate, settle the actual cost", () => {
  it("estimates with the fields' complexity and prices a result by what it returned", () => {
    expect(queryCost({ schema, query: "{ items(first: 10) { id name } }" })).toBe(20);
    expect(resultCost({ items: [{ id: 0, name: "a" }, { id: 1, name: null }] })).toBe(5);
  });

  it("reserves 20, runs the query, refunds 13 (it returned 3 items: 7 fields), once", async () => {
    const query = "{ items(first: 10) { id name } }";
    expect(await remaining()).toBe(50);
    const before = executions;
    const out = await runCostedQuery(client, request, { schema, query }, { execute: run(query) });
    expect(executions).toBe(before + 1);
    if (!out.allowed) throw new Error(`denied: ${JSON.stringify(out.answer)}`);
    expect(out.cost).toBe(20);
    expect(out.answer.remaining).toBe(30);
    expect(out.actualCost).toBe(7);
    expect(out.result.data).toEqual({ items: [0, 1, 2].map((id) => ({ id, name: `item ${id}` })) });
    expect(out.settled).toMatchObject({ ok: true, reservedCost: 20, actualCost: 7, refunded: 13, replayed: false });
    expect(await remaining()).toBe(43);
    // The refund happened once: settling the same reservation again gives nothing more back.
    const id = out.answer.reservationId!;
    expect(await client.settle(id, 7)).toMatchObject({ ok: true, refunded: 13, replayed: true });
    expect(await remaining()).toBe(43);
  });

  it("a query whose estimate is over the limit is denied 429 before execution", async () => {
    const query = "{ items(first: 100) { id name } }";
    const left = await remaining();
    const before = executions;
    const out = await runCostedQuery(client, request, { schema, query }, { execute: run(query) });
    expect(out).toMatchObject({ allowed: false, cost: 200, answer: { allowed: false, status: 429, reason: "cost_exceeds_limit" } });
    expect(executions).toBe(before);
    // Not over the limit itself, but over what is left of it: denied as well, and nothing consumed.
    const rest = `{ items(first: ${Math.floor(left / 2) + 1}) { id name } }`;
    const denied = await runCostedQuery(client, request, { schema, query: rest }, { execute: run(rest) });
    expect(denied).toMatchObject({ allowed: false, answer: { status: 429, reason: "rate_limited" } });
    expect(denied.answer.headers["Retry-After"]).toMatch(/^\d+$/);
    expect(executions).toBe(before);
    expect(await remaining()).toBe(left);
  });

  it("checkQuery asks with the estimate alone (no reservation)", async () => {
    const { cost, answer } = await checkQuery(client, { ...request, dryRun: true }, { schema, query: "{ items(first: 2) { id } }" });
    expect(cost).toBe(2);
    expect(answer).toMatchObject({ allowed: true, status: 200 });
    expect(answer.reservationId).toBeUndefined();
  });
});
