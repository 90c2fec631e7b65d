/**
 * CPU a process and its descendants have spent so far (µs of utime + stime, from /proc): read
 * before and after a run and divided by the decisions made, it is the load-robust figure of the
 * benchmarks. Descendants count too, so a server that forks workers (node:cluster) is measured whole.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Linux's USER_HZ: /proc counts CPU time in ticks of 1/100 s. */
const CLK_TCK = 100;

function ownCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1e6;
}

function children(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const c of readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(" ")) if (c) out.push(Number(c));
    }
  } catch {
    // the process is gone
  }
  return out;
}

export function cpuUs(pid: number): number {
  let total = 0;
  for (const stack = [pid]; stack.length > 0; ) {
    const p = stack.pop()!;
    try {
      total += ownCpuUs(p);
    } catch {
      continue;
    }
    stack.push(...children(p));
  }
  return total;
}
