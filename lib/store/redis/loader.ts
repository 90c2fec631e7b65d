/**
 * Sends DECIDE (FCALL, its library loaded where a node lacks it; a script where FUNCTION is refused)
 * and the small scripts (EVALSHA, EVAL on NOSCRIPT): docs/failure-modes.md. Only a call that did not
 * run is sent again: after a timeout it may have run, and running it again would count it twice.
 */
import { createHash } from "node:crypto";
import { type Cluster, Command } from "ioredis";
import { isFunctionMissing, isNoScript, type RedisClient } from "../../redis/client";
import { DECIDE_LIBRARY, decideLua } from "../lua/decide";

export const script = (source: string) => ({ source, sha: createHash("sha1").update(source).digest("hex") });
export type Script = ReturnType<typeof script>;

export interface ScriptStats {
  fcall: number;
  /** FUNCTION LOADs of the DECIDE library (a node that did not have it). */
  functionLoads: number;
  evalsha: number;
  /** EVAL fallbacks after NOSCRIPT. */
  eval: number;
}

export interface Loader {
  readonly stats: ScriptStats;
  /** One DECIDE call; `parts`: the Lua parts its decisions need (lib/store/lua/decide.ts luaParts), asked for only when it runs as a script. */
  decide(keys: string[], args: string[], parts: () => readonly string[]): Promise<unknown>;
  /** A small script, by EVALSHA (EVAL on NOSCRIPT). */
  run(s: Script, keys: string[], args: string[]): Promise<unknown>;
}

export function isCluster(redis: RedisClient): redis is Cluster {
  return (redis as { isCluster?: boolean }).isCluster === true;
}

/** DECIDE scripts by the Lua parts they hold (a handful of distinct sets in practice). */
const decideScripts = new Map<string, Script>();
function decideScript(parts: readonly string[]): Script {
  const id = parts.join(",");
  let s = decideScripts.get(id);
  if (!s) decideScripts.set(id, (s = script(decideLua(parts))));
  return s;
}

export function createLoader(redis: RedisClient): Loader {
  const stats: ScriptStats = { fcall: 0, functionLoads: 0, evalsha: 0, eval: 0 };
  /** Whether DECIDE runs as a Redis Function: null until a load told; false where FUNCTION LOAD is refused. */
  let functions: boolean | null = null;
  /** The load in progress (every call that found the function missing waits for the same one). */
  let loading: Promise<boolean> | null = null;

  /** Loads the library on every primary (one node, standalone); true once it is there, false when refused. */
  function loadLibrary(): Promise<boolean> {
    loading ??= (async () => {
      const nodes = isCluster(redis) ? redis.nodes("master") : [redis];
      try {
        for (const node of nodes) {
          stats.functionLoads++;
          await node.function("LOAD", DECIDE_LIBRARY.code).catch((error: unknown) => {
            // Another process (or an earlier load of this one) got there first: the same text.
            if (!(error instanceof Error && error.message.includes("already exists"))) throw error;
          });
        }
        functions = true;
      } catch (error) {
        // Refused for good: scripts from now on. Anything else (a timeout…) leaves it to the next call.
        if (error instanceof Error && /unknown command|NOPERM|unknown subcommand/i.test(error.message)) functions = false;
        else throw error;
      } finally {
        loading = null;
      }
      return functions === true;
    })();
    return loading;
  }

  async function run(s: Script, keys: string[], args: string[]): Promise<unknown> {
    stats.evalsha++;
    try {
      return await redis.evalsha(s.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      stats.eval++;
      return await redis.eval(s.source, keys.length, ...keys, ...args);
    }
  }

  // A Command without a reply encoding: the reply as it comes, without ioredis mapping every element
  // into a new array of strings (callBuffer would too, but breaks under auto-pipelining).
  const fcall = (keys: string[], args: string[]) => {
    stats.fcall++;
    const command = new Command("fcall", [DECIDE_LIBRARY.decide, String(keys.length), ...keys, ...args]);
    void redis.sendCommand(command);
    return command.promise;
  };

  return {
    stats,
    run,
    async decide(keys, args, parts) {
      if (functions !== false) {
        try {
          return await fcall(keys, args);
        } catch (error) {
          if (!isFunctionMissing(error)) throw error;
        }
        if (await loadLibrary()) return await fcall(keys, args);
      }
      return run(decideScript(parts()), keys, args);
    },
  };
}
