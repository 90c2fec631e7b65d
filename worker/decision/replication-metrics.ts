/**
 * The replication link's series on /metrics (docs/observability-and-billing.md, docs/regions.md),
 * read from its status when /metrics is: sluice_replication_lag_seconds, _dropped_total,
 * _late_total, _connected, and per other region sluice_region_peer_silence_seconds and
 * sluice_region_peer_silent (labels: `peer`, a region name: as many series as regions).
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { ReplicationStatus } from "./replication";

/** The largest lag of the last 10–20 s (sluice_replication_lag_seconds, /readyz lagMs): two 10 s buckets. */
export class RecentMax {
  private current = { startMs: 0, max: -1 };
  private previous = -1;
  private last: number | null = null;
  add(lagMs: number, nowMs: number): void {
    this.roll(nowMs);
    this.current.max = Math.max(this.current.max, lagMs);
    this.last = lagMs;
  }
  value(nowMs: number): number | null {
    this.roll(nowMs);
    const max = Math.max(this.current.max, this.previous);
    return max >= 0 ? max : this.last;
  }
  private roll(nowMs: number): void {
    if (nowMs - this.current.startMs < 10_000) return;
    this.previous = nowMs - this.current.startMs < 20_000 ? this.current.max : -1;
    this.current = { startMs: nowMs, max: -1 };
  }
}

/** A counter that follows a running total kept elsewhere (read when /metrics is). */
function totalCounter(registry: Registry, name: string, help: string, total: () => number): void {
  let reported = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = total();
      if (now > reported) this.inc(now - reported);
      reported = now;
    },
  });
}

export function registerReplicationMetrics(registry: Registry, status: () => ReplicationStatus): void {
  new Gauge({
    name: "sluice_replication_lag_seconds",
    help: "Shared limits (regions: shared): the largest lag of the last 10-20 s, from an admission in another region to its count here.",
    registers: [registry],
    collect() {
      const lagMs = status().lagMs;
      if (lagMs !== null) this.set(lagMs / 1000);
    },
  });
  totalCounter(registry, "sluice_replication_dropped_total", "Shared limits: units admitted here that were never sent to the other regions (the buffer was full while NATS was slow or unreachable).", () => status().droppedUnits);
  totalCounter(registry, "sluice_replication_late_total", "Shared limits: units from other regions that arrived after their window had ended here (not counted).", () => status().lateUnits);
  new Gauge({
    name: "sluice_replication_connected",
    help: "Shared limits: 1 while the link to NATS JetStream works, 0 while this region enforces its last share of them (sluice_region_share_ratio).",
    registers: [registry],
    collect() {
      this.set(status().status === "ok" ? 1 : 0);
    },
  });
  const silence: Gauge<"peer"> = new Gauge({
    name: "sluice_region_peer_silence_seconds",
    help: "Shared limits: per other region, seconds since its last batch or heartbeat arrived in this region.",
    labelNames: ["peer"],
    registers: [registry],
    collect() {
      silence.reset();
      for (const [peer, ms] of status().peerSilenceMs) silence.set({ peer }, ms / 1000);
    },
  });
  const silent: Gauge<"peer"> = new Gauge({
    name: "sluice_region_peer_silent",
    help: "Shared limits: 1 while that region is silent longer than SLUICE_REPLICATION_SILENT_MS and this region enforces the limit minus its last share (sluice_region_share_ratio).",
    labelNames: ["peer"],
    registers: [registry],
    collect() {
      silent.reset();
      const now = status();
      const names = new Set(now.silentPeers.map((p) => p.region));
      for (const peer of now.peerSilenceMs.keys()) silent.set({ peer }, names.has(peer) ? 1 : 0);
    },
  });
}
