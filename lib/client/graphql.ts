/**
 * `sluice/client/graphql`: rate limits by what a GraphQL query costs, not by how many HTTP requests
 * carry it. `queryCost` estimates a query with graphql-query-complexity (field `complexity`
 * extensions first, else 1 per field); `checkQuery` asks Sluice with that cost; `runCostedQuery`
 * reserves the estimate, runs the query and settles what it actually cost (POST /v1/settle).
 *
 * Needs `graphql` and `graphql-query-complexity` in the service (they are not bundled).
 */
import { type DocumentNode, type GraphQLSchema, parse } from "graphql";
import { type ComplexityEstimator, fieldExtensionsEstimator, getComplexity, simpleEstimator } from "graphql-query-complexity";
import type { SluiceClient } from "./client.js";
import type { DecisionAnswer, DecisionRequest, SettleOutcome } from "./types.js";

/** The decision API's largest cost. */
const MAX_COST = 1_000_000_000;

export interface QueryCostOptions {
  schema: GraphQLSchema;
  query: string | DocumentNode;
  variables?: Record<string, unknown>;
  operationName?: string;
  /** Default: the fields' `extensions.complexity`, else 1 per field. */
  estimators?: ComplexityEstimator[];
}

/** A query's estimated cost: an integer ≥ 1 (a query costs something even when it selects nothing priced). */
export function queryCost(options: QueryCostOptions): number {
  const document = typeof options.query === "string" ? parse(options.query) : options.query;
  const cost = getComplexity({
    schema: options.schema,
    query: document,
    variables: options.variables,
    operationName: options.operationName,
    estimators: options.estimators ?? [fieldExtensionsEstimator(), simpleEstimator({ defaultComplexity: 1 })],
  });
  return Math.min(MAX_COST, Math.max(1, Math.ceil(cost)));
}

export interface CheckedQuery {
  /** The estimated cost the decision was asked with. */
  cost: number;
  answer: DecisionAnswer;
}

/** Estimates the query's cost and asks Sluice with it. A parse error throws (the query could not run anyway). */
export async function checkQuery(client: SluiceClient, request: Omit<DecisionRequest, "cost">, query: QueryCostOptions): Promise<CheckedQuery> {
  const cost = queryCost(query);
  return { cost, answer: await client.check({ ...request, cost }) };
}

/**
 * The cost a query actually had, from its result: 1 per field in the response, every list item's
 * fields counted (an `items(first: 100)` that returned 3 items costs what 3 cost). It matches the
 * default estimate (1 per field) with list sizes as returned rather than as asked for; pass your
 * own `actualCost` when your estimators price fields otherwise.
 */
export function resultCost(data: unknown): number {
  let cost = 0;
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
    } else if (typeof value === "object" && value !== null) {
      for (const field of Object.values(value)) {
        cost++;
        walk(field);
      }
    }
  };
  walk(data);
  return Math.min(MAX_COST, cost);
}

export interface CostedQueryOptions<R> {
  /** Runs the query; called only when Sluice allows its estimated cost. */
  execute: () => R | Promise<R>;
  /** The cost the execution had (an integer ≥ 0). Default: `resultCost` of the result's `data`. */
  actualCost?: (result: R) => number;
}

export type CostedQuery<R> =
  /** Denied before execution: answer the client `answer.status` with `answer.headers`. */
  | { allowed: false; cost: number; answer: DecisionAnswer }
  | {
      allowed: true;
      /** The estimated cost, reserved before execution. */
      cost: number;
      /** The cost after execution, settled. */
      actualCost: number;
      answer: DecisionAnswer;
      result: R;
      /** The settle (null when nothing was reserved: a degraded answer, or a tier without limits). */
      settled: SettleOutcome | null;
    };

/**
 * Reserve-then-settle, as Shopify's calculated query cost: reserves the query's estimated cost
 * (`reserve: true`), runs it only when allowed, then settles the actual cost, so the difference is
 * refunded (once; a settle that fails is reported in `settled`, and the reservation stays charged
 * in full). A query whose estimate is over the limit is denied before it runs. An actual cost above
 * the estimate is charged no more than the estimate.
 */
export async function runCostedQuery<R extends { data?: unknown }>(
  client: SluiceClient,
  request: Omit<DecisionRequest, "cost" | "reserve">,
  query: QueryCostOptions,
  options: CostedQueryOptions<R>,
): Promise<CostedQuery<R>> {
  const cost = queryCost(query);
  const answer = await client.check({ ...request, cost, reserve: true });
  if (!answer.allowed) return { allowed: false, cost, answer };
  // An execution that throws is not settled: the reservation stays charged in full.
  const result = await options.execute();
  const measured = options.actualCost ? options.actualCost(result) : resultCost(result.data);
  if (!Number.isSafeInteger(measured) || measured < 0) throw new TypeError(`runCostedQuery: actualCost: expected an integer ≥ 0, got ${measured}`);
  const actualCost = Math.min(measured, MAX_COST);
  const settled = answer.reservationId === undefined ? null : await client.settle(answer.reservationId, actualCost);
  return { allowed: true, cost, actualCost, answer, result, settled };
}
