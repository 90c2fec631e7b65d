/**
 * Every core (SLUICE_DECISION_PROCESSES=N, default the machine's cores): N decision processes
 * sharing the HTTP and gRPC ports through node:cluster (the supervisor accepts connections and
 * hands them out in turn), each a whole decision server with its own Redis connection, policy
 * copy, caches and usage aggregates. This module is both sides:
 *
 * - the supervisor (the cluster's primary) starts them, restarts one that dies (after 0.1 s, then
 *   doubling up to 10 s while it keeps dying young; logged), and on SIGTERM/SIGINT asks every one
 *   to drain (the single process's semantics: stop accepting, answer what is in flight, flush
 *   usage) and exits when they all have, 0 when they all exited 0. If no process ever got ready
 *   (a bad setting fails each at start), it gives up and exits 1 instead of restarting forever;
 * - /metrics stays one view: the process that gets the scrape asks the supervisor, which gathers
 *   every process's registry and aggregates them (prom-client's AggregatorRegistry): counters and
 *   histograms summed, so totals are the decisions of all processes; Sluice's gauges (policy
 *   version, breaker state, accuracy settings) the maximum over processes (a breaker open in any
 *   process shows as open); Node's own metrics as prom-client aggregates them. A process that is
 *   restarted starts its counters from zero, which Prometheus reads as a counter reset.
 *
 * N=1 is no cluster at all: the decision server runs in the process started (worker/decision-server.ts).
 */
import { withDecisionFlags } from "../../lib/decision/process-flags";
import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";
import { errorMessage, type Logger } from "../../lib/log";

const FIRST_RESTART_MS = 100;
const MAX_RESTART_MS = 10_000;
/** A process that lived this long before dying is restarted at once again (its backoff is reset). */
const HEALTHY_AFTER_MS = 10_000;
/** How long the supervisor waits for every process to drain before it kills what is left. */
const SHUTDOWN_MS = 30_000;
/** How long a scrape waits for the other processes' metrics. */
const METRICS_TIMEOUT_MS = 3_000;

/** One metric of a registry as getMetricsAsJSON() gives it (what travels over IPC). */
type MetricJson = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>[number];

/** IPC between a decision process and its supervisor. */
type Message =
  | { type: "sluice:ready" }
  | { type: "sluice:metrics?"; id: number }
  | { type: "sluice:metrics-collect"; id: number }
  | { type: "sluice:metrics-json"; id: number; metrics: MetricJson[] }
  | { type: "sluice:metrics"; id: number; text?: string; error?: string };

function isMessage(m: unknown): m is Message {
  return typeof m === "object" && m !== null && typeof (m as { type?: unknown }).type === "string" && (m as { type: string }).type.startsWith("sluice:");
}

// ---- The supervisor

export interface SupervisorOptions {
  processes: number;
  logger: Logger;
}

/** Starts N decision processes (this script, as cluster workers) and supervises them. Never resolves. */
export function superviseDecisionProcesses(options: SupervisorOptions): void {
  const { processes, logger } = options;
  // Every decision process runs with the decision flags, however the supervisor itself was started.
  cluster.setupPrimary({ execArgv: withDecisionFlags(process.execArgv) });
  const slots = new Map<number, { worker: Worker | null; ready: boolean; startedAtMs: number; failures: number; timer: NodeJS.Timeout | null }>();
  let everReady = false;
  let stopping = false;

  function start(index: number): void {
    const slot = slots.get(index)!;
    slot.timer = null;
    slot.startedAtMs = Date.now();
    // The index is for the process's log lines (lib/env.ts SLUICE_DECISION_PROCESS_INDEX).
    const worker = cluster.fork({ SLUICE_DECISION_PROCESS_INDEX: String(index) });
    slot.worker = worker;
    slot.ready = false;
    worker.on("message", (message: unknown) => {
      if (!isMessage(message)) return;
      if (message.type === "sluice:ready") {
        logger.info({ process: index, pid: worker.process.pid }, `decision process ${index} of ${processes} ready`);
        everReady = true;
        slot.ready = true;
      } else if (message.type === "sluice:metrics?") {
        gatherMetrics().then(
          (text) => worker.isConnected() && worker.send({ type: "sluice:metrics", id: message.id, text } satisfies Message),
          (error: unknown) => worker.isConnected() && worker.send({ type: "sluice:metrics", id: message.id, error: errorMessage(error) } satisfies Message),
        );
      }
    });
    worker.once("exit", (code, signal) => {
      slot.worker = null;
      slot.ready = false;
      // A scrape waiting for this process does without it (its counters are gone with it).
      for (const c of collecting.values()) if (c.pending.delete(worker.id) && c.pending.size === 0) c.done(c.parts);
      if (stopping) {
        exited(code);
        return;
      }
      const livedMs = Date.now() - slot.startedAtMs;
      if (!everReady) {
        logger.fatal({ process: index, code, signal }, `decision process ${index} exited (${signal ?? `code ${code}`}) before any got ready: giving up`);
        shutdown("start failed", 1);
        return;
      }
      slot.failures = livedMs >= HEALTHY_AFTER_MS ? 0 : slot.failures + 1;
      const delayMs = Math.min(MAX_RESTART_MS, FIRST_RESTART_MS * 2 ** Math.max(0, slot.failures - 1));
      logger.warn({ process: index, pid: worker.process.pid, code, signal, livedMs, restartInMs: delayMs }, `decision process ${index} exited (${signal ?? `code ${code}`}); restarting in ${delayMs} ms`);
      slot.timer = setTimeout(() => start(index), delayMs);
    });
  }

  // ---- /metrics across processes
  let nextId = 0;
  const collecting = new Map<number, { pending: Set<number>; parts: MetricJson[][]; done: (parts: MetricJson[][]) => void }>();
  cluster.on("message", (worker, message: unknown) => {
    if (!isMessage(message) || message.type !== "sluice:metrics-json") return;
    const c = collecting.get(message.id);
    if (!c || !c.pending.delete(worker.id)) return;
    c.parts.push(message.metrics);
    if (c.pending.size === 0) c.done(c.parts);
  });
  /** Every ready process's registry, aggregated (a process still starting has decided nothing yet). */
  function gatherMetrics(): Promise<string> {
    const id = nextId++;
    const workers = [...slots.values()].filter((s) => s.ready && s.worker?.isConnected()).map((s) => s.worker!);
    return new Promise<MetricJson[][]>((resolve, reject) => {
      const timer = setTimeout(() => {
        const missing = collecting.get(id)?.pending.size ?? 0;
        collecting.delete(id);
        reject(new Error(`metrics: ${missing} decision processes did not answer within ${METRICS_TIMEOUT_MS} ms`));
      }, METRICS_TIMEOUT_MS);
      const done = (parts: MetricJson[][]) => {
        clearTimeout(timer);
        collecting.delete(id);
        resolve(parts);
      };
      if (workers.length === 0) return done([]);
      collecting.set(id, { pending: new Set(workers.map((w) => w.id)), parts: [], done });
      for (const w of workers) w.send({ type: "sluice:metrics-collect", id } satisfies Message);
    }).then((parts) => aggregateMetrics(parts).metrics());
  }

  // ---- Shutdown
  let exitCode = 0;
  function exited(code: number | null): void {
    if (code !== 0) exitCode = 1;
    if ([...slots.values()].every((s) => s.worker === null)) process.exit(exitCode);
  }
  function shutdown(reason: string, code = 0): void {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    logger.info({ signal: reason, processes }, `${reason}: draining ${processes} decision processes`);
    for (const slot of slots.values()) {
      if (slot.timer) clearTimeout(slot.timer);
      slot.timer = null;
      // Each drains as a single decision server does on SIGTERM.
      slot.worker?.process.kill("SIGTERM");
    }
    const cut = setTimeout(() => {
      logger.error(`decision processes still running after ${SHUTDOWN_MS} ms: killing them`);
      for (const slot of slots.values()) slot.worker?.process.kill("SIGKILL");
    }, SHUTDOWN_MS);
    cut.unref();
    exited(0);
  }
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));

  for (let index = 1; index <= processes; index++) {
    slots.set(index, { worker: null, ready: false, startedAtMs: 0, failures: 0, timer: null });
    start(index);
  }
}

/** Aggregates the processes' registries: sums, except Sluice's gauges, which take the maximum. */
export function aggregateMetrics(parts: MetricJson[][]): Registry {
  const adjusted = parts.map((metrics) =>
    metrics.map((m) => (String(m.type) === "gauge" && m.name.startsWith("sluice_") && (m.aggregator ?? "sum") === "sum" ? { ...m, aggregator: "max" as const } : m)),
  );
  return AggregatorRegistry.aggregate(adjusted);
}

// ---- A decision process

export interface ClusterMember {
  /** /metrics of all processes, aggregated by the supervisor; rejects when it cannot answer (never a partial view). */
  metricsText(): Promise<string>;
  /** Tells the supervisor this process serves. */
  ready(): void;
}

/** Wires a decision process to its supervisor: answers its metrics collection, asks it for the aggregate. */
export function joinCluster(registry: Registry, logger: Logger): ClusterMember {
  let nextId = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  process.on("message", (message: unknown) => {
    if (!isMessage(message)) return;
    if (message.type === "sluice:metrics-collect") {
      registry.getMetricsAsJSON().then(
        (metrics) => process.send?.({ type: "sluice:metrics-json", id: message.id, metrics } satisfies Message),
        (error: unknown) => logger.error({ err: errorMessage(error) }, "metrics: cannot read this process's registry"),
      );
    } else if (message.type === "sluice:metrics") {
      const w = waiting.get(message.id);
      if (!w) return;
      waiting.delete(message.id);
      if (message.text !== undefined) w.resolve(message.text);
      else w.reject(new Error(message.error ?? "metrics: no answer"));
    }
  });
  return {
    metricsText() {
      const id = nextId++;
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error("metrics: the supervisor did not answer"));
        }, METRICS_TIMEOUT_MS + 1_000);
        waiting.set(id, {
          resolve: (text) => {
            clearTimeout(timer);
            resolve(text);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        });
        process.send?.({ type: "sluice:metrics?", id } satisfies Message);
      });
    },
    ready() {
      process.send?.({ type: "sluice:ready" } satisfies Message);
    },
  };
}
