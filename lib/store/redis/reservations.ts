/**
 * Reserve-then-settle on Redis (docs/decision-api.md): a committed `reserve` decision's undo commands
 * in a record per hash slot they touch (lib/redis/keys.ts `reservation`), which SETTLE settles once.
 */
import { keys as redisKeys } from "../../redis/keys";
import type { RedisClient } from "../../redis/client";
import { newLeaseToken } from "../lease-id";
import { SETTLE_LUA } from "../lua/settle";
import { formatReservationId, parseReservationId, RESERVATION_TTL_MS } from "../reservation";
import type { SettleResult } from "../types";
import type { UndoCommand } from "./codec";
import { type Loader, script } from "./loader";

const SETTLE = script(SETTLE_LUA);

export interface Reservations {
  /** Writes a committed reservation's records and returns its id; undefined when nothing was committed, or the write failed (charged in full). */
  record(nowMs: number, cost: number, undo: UndoCommand[]): Promise<string | undefined>;
  settle(reservationId: string, actualCost: number): Promise<SettleResult>;
}

/** `testClock`: a test's clock runs apart from real time, so records then live an hour longer (their `e` decides, the TTL only collects). */
export function createReservations(redis: RedisClient, loader: Loader, nowArg: () => string, testClock: boolean): Reservations {
  async function settleRecord(record: string, actualCost: number): Promise<SettleResult> {
    const payload = await redis.hget(record, "u");
    if (payload === null) return { status: "unknown", reservedCost: 0, actualCost, refunded: 0 };
    const commandKeys = [...new Set((JSON.parse(payload) as UndoCommand[]).map((cmd) => String(cmd[1])))];
    const [status, reserved, actual, refunded] = (await loader.run(SETTLE, [record, ...commandKeys], [String(actualCost), nowArg()])) as [SettleResult["status"], string, string, string];
    return { status, reservedCost: Number(reserved), actualCost: Number(actual), refunded: Number(refunded) };
  }

  return {
    async record(nowMs, cost, undo) {
      if (undo.length === 0) return undefined;
      const token = newLeaseToken();
      const bySlot = new Map<string, UndoCommand[]>();
      for (const cmd of undo) {
        const record = redisKeys.reservation(String(cmd[1]), token);
        bySlot.set(record, [...(bySlot.get(record) ?? []), cmd]);
      }
      try {
        await Promise.all(
          [...bySlot].map(([record, cmds]) =>
            redis
              .multi()
              .hset(record, { c: String(cost), u: JSON.stringify(cmds), e: String(nowMs + RESERVATION_TTL_MS) })
              .pexpire(record, RESERVATION_TTL_MS + (testClock ? 60 * 60_000 : 0))
              .exec(),
          ),
        );
      } catch {
        return undefined;
      }
      return formatReservationId(token, [...bySlot.keys()]);
    },

    async settle(reservationId, actualCost) {
      const id = parseReservationId(reservationId);
      if (!id) return { status: "unknown", reservedCost: 0, actualCost, refunded: 0 };
      // One record per slot, each settled once on its own: a settle repeated after a partial
      // failure (Redis Cluster) finishes the slots still owed and replays the others.
      const results = await Promise.all(id.records.map((record) => settleRecord(record, actualCost)));
      const known = results.filter((r) => r.status !== "unknown");
      if (known.length === 0) return results[0]!;
      return known.find((r) => r.status === "conflict") ?? known.find((r) => r.status === "settled") ?? known[0]!;
    },
  };
}
