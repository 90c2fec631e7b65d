/**
 * A guarded rollout in Redis (docs/control-plane.md#guarded-rollout): the candidate document is
 * written next to the live one as `policy:v<N+1>` (policy:current stays N), and `{policy}:rollout`
 * says who gets it (RolloutRouting: the canaries and the step's percentage). One MULTI with a
 * PUBLISH on the policy channel, so every decision server reloads both at once. Rolling the cohort
 * back deletes the routing: everyone gets policy:current again; the candidate's key stays until
 * the next publish of that version number overwrites it.
 */
import type { CompiledPolicy } from "../policy/compiled";
import { parseCompiledPolicy } from "../policy/compiled-schema";
import { type RolloutRouting, rolloutRoutingSchema } from "../policy/rollout";
import type { RedisClient as RedisLike } from "./client";
import { readJsonDocument } from "./json-document";
import { keys } from "./keys";

async function exec(multi: ReturnType<RedisLike["multi"]>, what: string): Promise<void> {
  const results = await multi.exec();
  const failed = results?.find(([error]) => error);
  if (!results || failed) throw new Error(`${what} failed: ${failed?.[0]?.message ?? "transaction aborted"}`);
}

/** Writes the candidate next to the live version and routes the cohort to it; PUBLISHes the live version. */
export async function writeRolloutRouting(redis: RedisLike, candidate: CompiledPolicy, routing: RolloutRouting): Promise<void> {
  const multi = redis.multi();
  multi.set(keys.policyVersion(candidate.version), JSON.stringify(candidate));
  multi.set(keys.policyRollout(), JSON.stringify(routing));
  multi.publish(keys.policyChannel(), String(routing.liveVersion));
  await exec(multi, `routing rollout ${routing.id}`);
}

/** Sends everyone back to the live version (the cohort rolled back, the rollout aborted or completed). */
export async function clearRolloutRouting(redis: RedisLike, liveVersion: number): Promise<void> {
  const multi = redis.multi();
  multi.del(keys.policyRollout());
  multi.publish(keys.policyChannel(), String(liveVersion));
  await exec(multi, "clearing the rollout routing");
}

export type ReadRoutingResult = { status: "none" } | { status: "ok"; routing: RolloutRouting; text: string } | { status: "invalid"; message: string };

/** The routing as Redis holds it; `text` lets a reader skip re-parsing an unchanged one. */
export async function readRolloutRouting(redis: RedisLike): Promise<ReadRoutingResult> {
  const read = await readJsonDocument(redis, keys.policyRollout(), rolloutRoutingSchema);
  return read.status === "ok" ? { status: "ok", routing: read.value, text: read.text } : read;
}

/** The candidate document a routing names, validated against the routing's checksum; null when absent or not that document. */
export async function readCandidate(redis: RedisLike, routing: RolloutRouting): Promise<CompiledPolicy | null> {
  const text = await redis.get(keys.policyVersion(routing.candidateVersion));
  if (text === null) return null;
  const parsed = parseCompiledPolicy(text);
  if (!parsed.ok || parsed.value.version !== routing.candidateVersion || parsed.value.checksum !== routing.candidateChecksum) return null;
  return parsed.value;
}
