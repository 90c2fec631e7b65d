/**
 * The decision server's policy source on Redis (the PolicyPort of lib/decision/ports.ts): load the current version at start, follow the
 * PUBLISH channel, poll as a backup, and keep the last good document when a new one is invalid
 * (docs/pitfalls.md: a broken config must never silently mean "no limit").
 *
 * Also follows, on the same subscriber connection, the key revocation channel (evicting the key
 * index cache) and refreshes the set of accepted service token hashes on every poll.
 *
 * Reads the live version number then that version's document with lib/redis/policy.ts (which
 * validates shape, references and checksum). A read that failed (a timeout under load, Redis
 * briefly away) or a document not there yet is retried after RETRY_MS, so a missed read costs a
 * quarter second, not a whole poll interval; an invalid one is reported once and skipped
 * (versions are immutable).
 *
 * Redis losing the published state (a restart without persistence, an empty replica) never
 * replaces the last good copy (issue #17, defect 1): without `policy:current` the loaded document
 * stays in force; a service-token set without its PUBLISHED_MARKER only ever adds tokens to the
 * last published set (a token created after the loss works, none is dropped); the key index
 * keeps its cache (lib/redis/key-index.ts). `missing` names what Redis lacks, for /readyz, until
 * the worker's restore job (lib/jobs/restore-published.ts) or a publish writes it back.
 *
 * During a guarded rollout (docs/control-plane.md#guarded-rollout) it also holds the rollout's
 * candidate, version N+1, beside the live N: every load reads `{policy}:rollout` (the routing:
 * rollout id, canaries, the step's percentage), and when it names a candidate newer than the live
 * version, reads that document and computes the cohort once (lib/policy/rollout.ts cohortMembers,
 * the same function the control plane uses). `forTenant` is then one Set lookup per decision. A
 * routing or candidate that cannot be read keeps the last good split; no routing (or one the live
 * version has caught up with) sends everyone to the live version.
 */
import type { MissingPart, PolicyPort } from "../decision/ports";
import { Poller } from "../net/poller";
import type { CompiledPolicy } from "../policy/compiled";
import { keys, PUBLISHED_MARKER } from "./keys";
import type { RedisClient as RedisLike } from "./client";
import { readCurrentVersion, readPolicyVersion } from "./policy";
import { cohortMembers } from "../policy/rollout";
import { readCandidate, readRolloutRouting } from "./rollout";

/** Wait before re-reading after a failed or incomplete read. */
const RETRY_MS = 250;

export interface PolicySourceOptions {
  redis: RedisLike;
  /** A connection dedicated to SUBSCRIBE (null: poll only). */
  subscriber: RedisLike | null;
  pollMs: number;
  onPolicy?: (doc: CompiledPolicy, previous: CompiledPolicy | null) => void;
  onKeyRevoked?: (keyHash: string) => void;
  /** Called when the subscription was (re)established: messages may have been missed. */
  onResubscribed?: () => void;
  onServiceTokens?: (hashes: Set<string>) => void;
  /** A rollout's split changed (null: everyone on the live version again). */
  onRollout?: (split: RolloutSplit | null) => void;
  log?: (message: string) => void;
}

/** A running rollout as a decision server holds it: the candidate and who gets it, computed at load. */
export interface RolloutSplit {
  id: string;
  step: number;
  candidate: CompiledPolicy;
  cohort: ReadonlySet<string>;
  /** The routing's JSON as read, to skip an unchanged one. */
  text: string;
}

export class PolicySource implements PolicyPort {
  private doc: CompiledPolicy | null = null;
  private split: RolloutSplit | null = null;
  /** Reads once more after a run when a PUBLISH arrived during it (it may name a newer version). */
  private readonly poller: Poller;
  /** The last version that failed to parse, so a bad document is reported once. */
  private rejectedVersion = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly missingParts = new Set<MissingPart>();
  /** The last service-token set Redis held with its marker (sha256 hex), and what was handed out. */
  private publishedTokens = new Set<string>();
  private tokensInForce: Set<string> | null = null;

  constructor(private readonly options: PolicySourceOptions) {
    this.poller = new Poller(
      async () => {
        if (!(await this.load())) this.retrySoon();
      },
      options.pollMs,
      true,
    );
  }

  get current(): CompiledPolicy | null {
    return this.doc;
  }

  /** The rollout split in force (null: none, everyone gets `current`). */
  get rollout(): RolloutSplit | null {
    return this.split;
  }

  /** The document that decides for `tenant`: the candidate for the cohort of a running rollout, else the live one. */
  forTenant(tenant: string): CompiledPolicy | null {
    const split = this.split;
    return split !== null && split.cohort.has(tenant) ? split.candidate : this.doc;
  }

  get missing(): readonly MissingPart[] {
    return [...this.missingParts].sort();
  }

  private setMissing(part: MissingPart, isMissing: boolean): void {
    const was = this.missingParts.has(part);
    if (was === isMissing) return;
    if (isMissing) this.missingParts.add(part);
    else this.missingParts.delete(part);
    if (part === "policy" && this.doc === null) return; // nothing published yet: not a loss
    this.options.log?.(isMissing ? `Redis lost the published ${part}; keeping the last good one in memory until it is restored` : `published ${part} back in Redis`);
  }

  /** A token set read from Redis: with its marker it replaces the last one, without it only adds to it. */
  private acceptTokens(members: string[]): void {
    const marked = members.includes(PUBLISHED_MARKER);
    const read = new Set(members.filter((m) => m !== PUBLISHED_MARKER));
    this.setMissing("serviceTokens", !marked);
    let next: Set<string>;
    if (marked) {
      this.publishedTokens = read;
      next = read;
    } else {
      next = new Set([...this.publishedTokens, ...read]);
    }
    const same = this.tokensInForce !== null && next.size === this.tokensInForce.size && [...next].every((t) => this.tokensInForce!.has(t));
    if (same) return;
    this.tokensInForce = next;
    this.options.onServiceTokens?.(next);
  }

  async start(): Promise<void> {
    const { subscriber } = this.options;
    if (subscriber) {
      subscriber.on("message", (channel: string, message: string) => {
        if (channel === keys.policyChannel()) void this.refresh();
        else if (channel === keys.keyChannel()) this.options.onKeyRevoked?.(message);
      });
      // SUBSCRIBE only on a ready connection, and again on every one. Sent earlier (queued while
      // connecting), it could reach Redis before ioredis's ready check (INFO), which then failed
      // in subscriber mode; the connection was dropped before it was ever ready, so ioredis's own
      // resubscription had nothing to restore, and this server heard no PUBLISH again, following
      // publishes only by polling (policy-distribution.int.test.ts, 2 runs in 5).
      const subscribe = () =>
        subscriber.subscribe(keys.policyChannel(), keys.keyChannel()).then(
          () => undefined,
          (error: unknown) => this.options.log?.(`policy channel subscription failed (polling meanwhile): ${error instanceof Error ? error.message : String(error)}`),
        );
      subscriber.on("ready", () => {
        void subscribe();
        // Messages may have been missed while disconnected: catch up.
        this.options.onResubscribed?.();
        void this.refresh();
      });
      if (subscriber.status === "ready") await subscribe();
    }
    await this.poller.start();
  }

  /** Loads the current version if it changed. Never throws; never replaces a good doc with a bad one. */
  refresh(): Promise<void> {
    return this.poller.refresh();
  }

  private retrySoon(): void {
    if (this.poller.stopped || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.refresh();
    }, RETRY_MS);
    this.retryTimer.unref();
  }

  /**
   * False when the read should be tried again soon: it failed, the document is not there yet, or
   * Redis lacks what this server had (then the restore's PUBLISH may arrive before this subscriber
   * has resubscribed, so waiting for it, or for the next poll, could cost seconds).
   */
  private async load(): Promise<boolean> {
    const done = await this.loadOnce();
    const split = done ? await this.loadRollout() : true;
    return done && split && !(this.doc !== null && this.missingParts.size > 0);
  }

  /** Reads the rollout routing and, when it changed, its candidate; false to retry soon. Never throws. */
  private async loadRollout(): Promise<boolean> {
    const live = this.doc;
    try {
      const read = await readRolloutRouting(this.options.redis);
      if (read.status === "invalid") {
        this.options.log?.(`rollout routing rejected (${read.message}); keeping ${this.split ? `rollout ${this.split.id}` : "the live version for everyone"}`);
        return true;
      }
      if (read.status === "none" || live === null) {
        this.setSplit(null);
        return true;
      }
      const routing = read.routing;
      if ( routing.candidateVersion <= live.version || routing.liveVersion !== live.version) {
        this.setSplit(null);
        return true;
      }
      if (this.split?.text === read.text) return true;
      const candidate =
        this.split?.candidate.version === routing.candidateVersion && this.split.candidate.checksum === routing.candidateChecksum
          ? this.split.candidate
          : await readCandidate(this.options.redis, routing);
      if (candidate === null) return false;
      const cohort = cohortMembers({ salt: routing.id, canaries: routing.canaries, percent: routing.percent }, Object.keys(candidate.tenants));
      this.setSplit({ id: routing.id, step: routing.step, candidate, cohort, text: read.text });
      return true;
    } catch (error) {
      this.options.log?.(`rollout refresh failed: ${error instanceof Error ? error.message : String(error)}`);
      return false;
    }
  }

  private setSplit(split: RolloutSplit | null): void {
    if (split === null && this.split === null) return;
    this.split = split;
    this.options.onRollout?.(split);
  }

  private async loadOnce(): Promise<boolean> {
    const { redis } = this.options;
    try {
      // A failed side read (null) says nothing about what is missing; only an answer does.
      const tokens = this.options.onServiceTokens ? redis.smembers(keys.serviceTokens()).catch(() => null) : null;
      const indexMarker = redis.hexists(keys.keyIndex(), PUBLISHED_MARKER).catch(() => null);
      const version = await readCurrentVersion(redis);
      const tokenList = tokens ? await tokens : null;
      if (tokenList) this.acceptTokens(tokenList);
      const marker = await indexMarker;
      if (marker !== null) this.setMissing("keyIndex", marker !== 1);
      this.setMissing("policy", version === null);
      if (version === null) return true;
      if (this.doc && this.doc.version === version) return true;
      if (version === this.rejectedVersion) return true;
      const read = await readPolicyVersion(redis, version);
      if (read.status === "none") return false;
      if (read.status !== "ok") {
        this.rejectedVersion = version;
        const why = read.issues.map((i) => `${i.path}: ${i.message}`).join("; ");
        this.options.log?.(`policy v${version} rejected (${why}); keeping v${this.doc?.version ?? 0}`);
        return true;
      }
      const parsed = { value: read.policy };
      const previous = this.doc;
      this.doc = parsed.value;
      this.options.onPolicy?.(parsed.value, previous);
      return true;
    } catch (error) {
      this.options.log?.(`policy refresh failed: ${error instanceof Error ? error.message : String(error)}`);
      return false;
    }
  }

  stop(): void {
    this.poller.stop();
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }
}
