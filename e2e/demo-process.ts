/**
 * Stopping a demo the way a terminal's Ctrl-C does, and checking that nothing it started is left.
 * The demo is spawned `detached`, so it leads its own process group and every process it starts
 * (control plane, decision server, worker, traffic generator, embedded PostgreSQL) belongs to it.
 */
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Live (not zombie) processes of process group `pgid`, as "pid command line". */
function groupMembers(pgid: number): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) !== pgid || state === "Z") continue;
      out.push(`${entry} ${fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").trim()}`);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * SIGINT to the demo; waits up to 30 s for it to exit and then up to 5 s for its process group to
 * empty. Whatever is still running then is killed, and returned as `survivors`.
 */
export async function interruptDemo(demo: ChildProcess, exited: Promise<number | null>): Promise<{ code: number | null | "timeout"; survivors: string[] }> {
  const pgid = demo.pid!;
  if (demo.exitCode === null) process.kill(pgid, "SIGINT");
  const code = await Promise.race([exited, sleep(30_000).then(() => "timeout" as const)]);
  const deadline = Date.now() + 5_000;
  while (groupMembers(pgid).length > 0 && Date.now() < deadline) await sleep(100);
  const survivors = groupMembers(pgid);
  if (code === "timeout" || survivors.length > 0) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // the group emptied meanwhile
    }
  }
  return { code, survivors };
}
