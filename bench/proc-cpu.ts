/**
 * CPU a process has spent so far (µs of utime + stime, from /proc/<pid>/stat): read before and
 * after a run and divided by the decisions made, it is the load-robust figure of the benchmarks.
 */
import { readFileSync } from "node:fs";

/** Linux's USER_HZ: /proc counts CPU time in ticks of 1/100 s. */
const CLK_TCK = 100;

export function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1e6;
}
