/**
 * `sluice/client/graphql`: rate limits by what a GraphQL query costs, not by how many HTTP requests
 * carry it. `queryCost` estimates a query with graphql-query-complexity (field `complexity`
 * extensions first, else 1 per field); `checkQuery` asks Sluice with that cost.
 *
 * Needs `graphql` and `graphql-query-complexity` in the service (they are not bundled).
 */
import { type DocumentNode, type GraphQLSchema, parse } from "graphql";
import { type ComplexityEstimator, fieldExtensionsEstimator, getComplexity, simpleEstimator } from "graphql-query-complexity";
import type { SluiceClient } from "./client.js";
import type { DecisionAnswer, DecisionRequest } from "./types.js";

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
