/**
 * `regions: shared` over NATS JetStream (docs/regions.md, SLUICE_REPLICATION_URL): this decision
 * server's link to the other regions.
 *
 * - Sending: the outbox (lib/regions/replication.ts) coalesces what this region admitted per counter
 *   and window; FLUSH_MS after its first unit, as soon as it holds FULL_ENTRIES entries, or when a
 *   publish slot frees up, it becomes batches published to `sluice.replication.<region>` on the
 *   stream SLUICE_REPLICATION (each with a message id, so a publish retried after a lost ack is
 *   stored once). Never on the decision path: while NATS is slow or unreachable the outbox keeps
 *   coalescing up to its bound, batches to send again wait (at most MAX_QUEUED), and what does not
 *   fit is dropped and counted.
 * - Applying: one durable pull consumer per region (`sluice-apply-<region>`), shared by the
 *   region's decision servers, so each message is applied once per region: the other regions'
 *   batches are added to this region's Redis (lib/regions/replication-apply.ts) and
 *   acknowledged; this region's own are acknowledged and skipped. A batch Redis could not take is
 *   redelivered.
 * - Status: `ok` (connected, consuming), `connecting`, or `degraded` (NATS unreachable: each shared
 *   limit is enforced at this region's last share of it, floor(L × share), as measured while the
 *   link worked (lib/regions/region-share-meter.ts), until it is back, when JetStream delivers what it
 *   stored and the batches waiting here are sent; windows that ended meanwhile are skipped). `lagMs`: the
 *   largest replication lag of the batches applied in the last 10–20 s — from the first admission
 *   of a batch in its region (store clock) to its INCRBY here (Redis TIME). A batch that arrives
 *   after every window of it ended (JetStream redelivering, after a cut, what it stored before)
 *   counts nothing and is not a lag of live traffic: its units are counted as late instead.
 * - Peers (a partial cut, lib/regions/region-liveness.ts): a batch, or every heartbeatMs without one a
 *   heartbeat (a batch with no entries), tells the other regions this one is alive; whichever process
 *   applies another region's message records its arrival in this region's Redis
 *   (lib/regions/region-heard.ts), and every tickMs each process reads when every region was last
 *   heard from. While the link is `ok` and a region is silent longer than silentMs, this region
 *   enforces each shared limit minus that region's last share (which it enforces on its own once
 *   cut); heard from again, the whole limit. Like a degraded share, a change of the policy in force,
 *   never work per decision.
 */
import { randomBytes } from "node:crypto";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JsMsg, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import type { RedisClient } from "../../lib/redis/client";
import { createHeardLedger } from "../../lib/regions/region-heard";
import { createReplicationApplier } from "../../lib/regions/replication-apply";
import { PeerLiveness, type SilentPeer } from "../../lib/regions/region-liveness";
import type { DegradedShares } from "../../lib/policy/region-shares";
import { RegionShareMeter } from "../../lib/regions/region-share-meter";
import { decodeReplication, encodeReplication, type OutboxBatch, replicationMessageSchema, ReplicationOutbox } from "../../lib/regions/replication";
import { RecentMax, registerReplicationMetrics } from "./replication-metrics";

export const REPLICATION_STREAM = "SLUICE_REPLICATION";
const SUBJECT = "sluice.replication";
/** A batch is sent at most this long after its first unit was admitted (ms). */
const FLUSH_MS = 15;
/** …or as soon as the outbox holds this many (counter, window) entries. */
const FULL_ENTRIES = 500;
/** Distinct (counter, window) entries the outbox holds while batches cannot go out. */
const MAX_ENTRIES = 50_000;
/** Batches waiting to be sent (again); the oldest is dropped beyond it. */
const MAX_QUEUED = 200;
const MAX_IN_FLIGHT = 4;
const PUBLISH_TIMEOUT_MS = 2_000;
/**
 * NATS pings: a link that went silent without closing (a partition, not a stopped server) is found
 * cut after about PING_INTERVAL_MS × MAX_PINGS_OUT (the client's default would take four minutes).
 */
const PING_INTERVAL_MS = 5_000;
const MAX_PINGS_OUT = 2;
/** The stream keeps a message this long: longer than any outage a window could still care about is pointless. */
const STREAM_MAX_AGE_MS = 3_600_000;
const nanos = (ms: number) => ms * 1_000_000;
/** SLUICE_REPLICATION_SILENT_MS's default: a silent peer is given up about when a silent link of this region's own is found cut (PING_INTERVAL_MS × MAX_PINGS_OUT). */
export const SILENT_MS = 10_000;
/** An idle region's heartbeat: five within the silence allowed, so a slow link or a busy process does not make it look silent. */
export const heartbeatMsOf = (silentMs: number) => Math.max(200, Math.floor(silentMs / 5));
/** How often a process reads when each region was last heard from: ten times within the silence allowed, at most once a second. */
export const peerTickMsOf = (silentMs: number) => Math.min(1_000, Math.max(100, Math.floor(silentMs / 10)));

export type ReplicationState = "connecting" | "ok" | "degraded";
export interface ReplicationStatus {
  status: ReplicationState;
  lagMs: number | null;
  /** Units admitted here that were never sent: the outbox or the queue was full. */
  droppedUnits: number;
  /** Units from other regions that arrived here after their window had ended (not counted). */
  lateUnits: number;
  /** The share of each shared limit this region enforces: while degraded its own last share, while other regions are silent 1 − theirs; null: the whole limit. */
  sharesInForce: DegradedShares | null;
  /** While the link is `ok`: the other regions silent longer than silentMs, each with the shares given up for it. */
  silentPeers: SilentPeer[];
  /** Per other region heard from, how long since its last batch or heartbeat arrived here (ms, as of the last look). */
  peerSilenceMs: ReadonlyMap<string, number>;
}

export interface ReplicationLink {
  outbox: ReplicationOutbox;
  status(): ReplicationStatus;
  close(): Promise<void>;
}

export interface ReplicationOptions {
  url: string;
  region: string;
  redis: RedisClient;
  /** SLUICE_REDIS_PREFIX: a batch may only touch this deployment's counters. */
  prefix: string;
  log: (message: string) => void;
  registry: Registry;
  /** The regions of the deployment as this server knows them (the shares document's), or null without one. */
  regions: () => readonly string[] | null;
  /** SLUICE_REPLICATION_SILENT_MS: another region not heard from for longer is given up (default SILENT_MS). */
  silentMs?: number;
  /** The shares to enforce changed (the link degraded, other regions fell silent or came back; null: the whole limit): the backend applies them to the policy. */
  onDegradedShares: (shares: DegradedShares | null) => void;
}

interface Queued {
  id: string;
  payload: Uint8Array;
  expireAtMs: number;
  units: number;
}

export function startReplication(options: ReplicationOptions): ReplicationLink {
  const { region, log } = options;
  const apply = createReplicationApplier(options.redis);
  const lag = new RecentMax();
  const queue: Queued[] = [];
  const idBase = `${region}-${randomBytes(6).toString("hex")}`;
  let seq = 0;
  let inFlight = 0;
  let state: ReplicationState = "connecting";
  let nc: NatsConnection | null = null;
  let closed = false;
  let flushTimer: NodeJS.Timeout | null = null;
  let queueDropped = 0;
  let lateUnits = 0;
  const meter = new RegionShareMeter();
  let degradedShares: DegradedShares | null = null;
  const silentMs = options.silentMs ?? SILENT_MS;
  const peers = new PeerLiveness({ self: region, silentMs, meter });
  const ledger = createHeardLedger(options.redis, options.prefix);
  /** Regions whose messages this process applied since its last look (written to the ledger then). */
  const heard = new Set<string>();
  let linkedSinceMs: number | null = null;
  let lastPublishMs = 0;
  /** When anything of another region last arrived in this region (this process's clock): what a cut link's share is measured as of. */
  let lastHeardMs = 0;
  let handed: DegradedShares | null = null;

  /** Degraded: this region's own last shares; linked: what silent peers leave (null: the whole limit). Handed to the backend on a change only. */
  function handShares(): void {
    const next = state === "degraded" ? degradedShares : peers.sharesLeft;
    if (next === handed) return;
    handed = next;
    options.onDegradedShares(next);
  }

  /**
   * Every change of state goes through here: going degraded freezes this region's last measured
   * shares (what it measures after the cut would be its own traffic only) and hands them to the
   * backend; going `ok` lifts them. Either way no peer is judged silent until it has had
   * silentMs to be heard from over the link as it is now.
   */
  function become(next: ReplicationState): void {
    if (next === state) return;
    state = next;
    peers.reset();
    linkedSinceMs = next === "ok" ? Date.now() : null;
    if (next === "degraded") {
      const regionCount = Math.max(options.regions()?.length ?? 1, meter.otherRegions + 1);
      // As of the last arrival: a link that went silent (a partition) before its pings found it cut
      // brought nothing of the others' since, and a window measured after it would look like all ours.
      const nowMs = Date.now();
      degradedShares = meter.snapshot(nowMs, regionCount, lastHeardMs > 0 ? Math.min(nowMs, lastHeardMs) : nowMs);
    } else if (next === "ok") degradedShares = null;
    handShares();
  }

  /** Every peerTickMs: records the regions this process heard from, reads when each was last heard from, and gives up (or takes back) silent regions' shares. */
  async function lookAtPeers(): Promise<void> {
    const names = [...heard];
    heard.clear();
    const read = await ledger(names).catch(() => null);
    if (read === null) {
      for (const r of names) heard.add(r); // Redis away: written on a later look
      return;
    }
    const newest = Math.max(0, ...[...read.heardMs].filter(([r]) => r !== region).map(([, ms]) => ms));
    if (newest > 0) lastHeardMs = Math.max(lastHeardMs, Date.now() - Math.max(0, read.nowMs - newest));
    const linkedForMs = state === "ok" && linkedSinceMs !== null ? Date.now() - linkedSinceMs : null;
    const changed = peers.observe({ nowMs: read.nowMs, heardMs: read.heardMs, linkedForMs, regions: options.regions() });
    if (!changed) return;
    const silent = peers.silentPeers.map((p) => p.region);
    log(silent.length > 0 ? `replication: no batch or heartbeat from ${silent.join(", ")} for over ${silentMs} ms: shared limits enforce the limit minus their last share` : "replication: every region heard from again: shared limits count every region's traffic");
    handShares();
  }

  /** An idle region's heartbeat: a batch with no entries, so the other regions know it is alive (and old servers apply it as an empty batch). */
  function heartbeat(): void {
    const conn = nc;
    if (conn === null || state !== "ok" || inFlight > 0 || Date.now() - lastPublishMs < heartbeatMsOf(silentMs)) return;
    lastPublishMs = Date.now();
    const payload = new TextEncoder().encode(JSON.stringify(encodeReplication(region, { firstAdmitMs: lastPublishMs, entries: [] })));
    jetstream(conn).publish(`${SUBJECT}.${region}`, payload, { msgID: `${idBase}-${++seq}`, timeout: PUBLISH_TIMEOUT_MS }).catch(() => undefined);
  }
  let peerTimer: NodeJS.Timeout | null = null;
  const scheduleLook = () => {
    peerTimer = setTimeout(() => {
      heartbeat();
      void lookAtPeers().finally(() => {
        if (!closed) scheduleLook();
      });
    }, peerTickMsOf(silentMs));
    peerTimer.unref();
  };
  scheduleLook();

  const outbox = new ReplicationOutbox({
    maxEntries: MAX_ENTRIES,
    fullEntries: FULL_ENTRIES,
    onFirst: () => {
      flushTimer ??= setTimeout(flush, FLUSH_MS);
    },
    onFull: () => setImmediate(flush),
  });

  /**
   * Takes the outbox into batches only when they can go out now (the link works, a publish slot is
   * free, no batch waits to be sent again): while publishes are slow the outbox keeps coalescing, so
   * a slow link makes the batches bigger instead of a queue longer (and the lag with it).
   */
  function flush(): void {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = null;
    if (nc !== null && state === "ok" && inFlight < MAX_IN_FLIGHT && queue.length === 0) {
      for (const batch of outbox.take(Date.now(), FULL_ENTRIES)) {
        meter.record(batch.entries, null);
        enqueue(batch);
      }
    }
    send();
  }

  function enqueue(batch: OutboxBatch): void {
    const payload = new TextEncoder().encode(JSON.stringify(encodeReplication(region, batch)));
    const expireAtMs = Math.max(...batch.entries.map((e) => e.expireAtMs));
    queue.push({ id: `${idBase}-${++seq}`, payload, expireAtMs, units: batch.entries.reduce((n, e) => n + e.units, 0) });
    while (queue.length > MAX_QUEUED) queueDropped += queue.shift()!.units;
  }

  function send(): void {
    const conn = nc;
    if (conn === null || state !== "ok") return;
    const js = jetstream(conn);
    while (inFlight < MAX_IN_FLIGHT && queue.length > 0) {
      const b = queue.shift()!;
      // Only garbage collection (the applying region judges on its own Redis TIME): every window of it ended.
      if (b.expireAtMs <= Date.now()) continue;
      inFlight++;
      lastPublishMs = Date.now();
      js.publish(`${SUBJECT}.${region}`, b.payload, { msgID: b.id, timeout: PUBLISH_TIMEOUT_MS }).then(
        () => {
          inFlight--;
          if (queue.length > 0) send();
          else flush();
        },
        () => {
          // Not stored, or its ack was lost: sent again with the same id (the stream drops a duplicate).
          inFlight--;
          queue.unshift(b);
          setTimeout(send, 250).unref();
        },
      );
    }
  }

  async function handle(m: JsMsg): Promise<void> {
    let parsed;
    try {
      parsed = replicationMessageSchema.safeParse(JSON.parse(new TextDecoder().decode(m.data)));
    } catch {
      parsed = null;
    }
    if (!parsed?.success) {
      log(`replication: ignored a message on ${m.subject} that does not validate`);
      m.ack();
      return;
    }
    const message = parsed.data;
    if (message.region === region) {
      m.ack();
      return;
    }
    heard.add(message.region);
    lastHeardMs = Date.now();
    const entries = decodeReplication(message).filter((e) => e.key.startsWith(`${options.prefix}{`));
    try {
      const applied = await apply(entries);
      if (applied.units > 0) lag.add(Math.max(0, applied.nowMs - message.firstAdmitMs), Date.now());
      // Late units too: they are what that region admitted in their window, which is what a share measures.
      meter.record(entries, message.region);
      lateUnits += entries.reduce((n, e) => n + e.units, 0) - applied.units;
      m.ack();
    } catch (error) {
      log(`replication: could not apply a batch from ${message.region} (redelivered): ${error instanceof Error ? error.message : String(error)}`);
      m.nak(500);
    }
  }

  /** Creates the stream and this region's consumer when missing (the same config from every server: idempotent). */
  async function ensureStream(conn: NatsConnection): Promise<void> {
    const jsm = await jetstreamManager(conn);
    await jsm.streams.info(REPLICATION_STREAM).catch(() =>
      jsm.streams.add({ name: REPLICATION_STREAM, subjects: [`${SUBJECT}.>`], storage: StorageType.File, retention: RetentionPolicy.Limits, max_age: nanos(STREAM_MAX_AGE_MS), duplicate_window: nanos(120_000) }),
    );
    const durable = `sluice-apply-${region}`;
    await jsm.consumers.info(REPLICATION_STREAM, durable).catch(() =>
      jsm.consumers.add(REPLICATION_STREAM, { durable_name: durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New, ack_wait: nanos(10_000), max_ack_pending: 1_000 }),
    );
  }

  /** Applies the other regions' batches until closed; after an error (the server went away) it starts over. */
  async function consumeLoop(conn: NatsConnection): Promise<void> {
    while (!closed) {
      try {
        await ensureStream(conn);
        const consumer = await jetstream(conn).consumers.get(REPLICATION_STREAM, `sluice-apply-${region}`);
        const messages = await consumer.consume({ max_messages: 256 });
        become("ok");
        flush();
        for await (const m of messages) await handle(m);
      } catch (error) {
        if (closed) return;
        if (state === "ok") log(`replication: consumer stopped (${error instanceof Error ? error.message : String(error)}); retrying`);
        become("degraded");
      }
      // Ended or failed: start over after a pause (never a tight loop against a server that is away).
      if (!closed) await new Promise((r) => setTimeout(r, 500));
    }
  }

  async function watch(conn: NatsConnection): Promise<void> {
    for await (const s of conn.status()) {
      if (s.type === "disconnect") {
        if (state !== "degraded") log("replication: NATS unreachable: shared limits enforce this region's last share of them");
        become("degraded");
      } else if (s.type === "reconnect") {
        log("replication: NATS reachable again: shared limits count every region's traffic");
        become("ok");
        flush();
      }
    }
  }

  async function run(): Promise<void> {
    while (!closed && nc === null) {
      try {
        const conn = await connect({ servers: options.url.split(","), name: `sluice-decision-${region}`, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2_000, pingInterval: PING_INTERVAL_MS, maxPingOut: MAX_PINGS_OUT });
        nc = conn;
        void watch(conn).catch(() => undefined);
        void consumeLoop(conn);
      } catch (error) {
        if (state !== "degraded") log(`replication: cannot reach NATS at ${options.url} (${error instanceof Error ? error.message : String(error)}): shared limits enforce this region's last share of them; retrying`);
        become("degraded");
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }
  void run();

  const status = (): ReplicationStatus => ({
    status: state,
    lagMs: lag.value(Date.now()),
    droppedUnits: outbox.droppedUnits + queueDropped,
    lateUnits,
    sharesInForce: handed,
    silentPeers: peers.silentPeers,
    peerSilenceMs: peers.silenceMs,
  });
  registerReplicationMetrics(options.registry, status);

  return {
    outbox,
    status,
    async close() {
      closed = true;
      flush();
      // What is on its way gets a moment to be stored; the rest of this region's counts stay here.
      const deadline = Date.now() + 1_000;
      while ((inFlight > 0 || (queue.length > 0 && state === "ok")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      if (flushTimer) clearTimeout(flushTimer);
      if (peerTimer) clearTimeout(peerTimer);
      await nc?.drain().catch(() => undefined);
    },
  };
}
