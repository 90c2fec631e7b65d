/**
 * scripts/preflight.sh, every branch, without touching the machine: the script runs with a PATH of
 * stubs only (apt-get, id, pg_*, redis-*, rabbitmq-server… each logging its call), so "installed",
 * "running" and "root" are whatever a test says. RabbitMQ and NATS are probed over TCP, so a test
 * listens on a free port of its own to make each answer.
 */
import { type ChildProcessByStdio, execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../lib/net/ports";

const SCRIPT = path.resolve(import.meta.dirname, "preflight.sh");
/** Real tools the script may use besides the ones it checks for. */
const REAL_TOOLS = ["bash", "timeout", "sleep", "seq", "head", "cut", "sed", "printenv", "cat", "touch"];

/** What each apt package puts on PATH, as stubs. */
const PACKAGES: Record<string, string[]> = {
  chromium: ["chromium"],
  "nginx-light": ["nginx"],
  wrk: ["wrk"],
  "nghttp2-client": ["h2load"],
  "redis-server": ["redis-server", "redis-cli"],
  postgresql: ["pg_ctlcluster", "pg_lsclusters", "pg_conftool", "pg_isready", "psql", "createdb"],
  "rabbitmq-server": ["rabbitmq-server"],
  "nats-server": ["nats-server"],
};

/** The stubs' bodies: $LOG gets one line per call, $STATE holds which services are "up". */
function stubBody(name: string): string {
  const log = `echo "${name} $*" >> "$LOG"`;
  switch (name) {
    case "id":
      return `echo "$STUB_UID"`;
    case "apt-get":
      return `${log}\n[ "$1" = install ] || exit 0\nfor p in "$@"; do [ -f "$AVAILABLE/$p" ] && while read -r b; do ${execFileSync("bash", ["-c", "command -v ln"]).toString().trim()} -sf "$AVAILABLE/bin/$b" "$BIN/$b"; done < "$AVAILABLE/$p"; done\nexit 0`;
    case "pg_isready":
      return `[ -f "$STATE/pg-up" ]`;
    case "pg_ctlcluster":
      return `${log}\n[ "$4" = start ] && touch "$STATE/pg-up"\nexit 0`;
    case "pg_lsclusters":
      return `echo "15 main 5432 online postgres /var/lib/postgresql/15/main log"`;
    case "pg_conftool":
      return `${log}\necho "$STATE/pg_hba.conf"`;
    case "psql":
      return `${log}\nexit 0`;
    case "redis-cli":
      return `[ -f "$STATE/redis-up" ] && echo PONG\nexit 0`;
    case "redis-server":
      return `${log}\ntouch "$STATE/redis-up"`;
    case "rabbitmq-server":
      return `${log}\ntouch "$STATE/amqp-started"`;
    case "nats-server":
      return `${log}\ntouch "$STATE/nats-started"`;
    default:
      return `${log}\nexit 0`;
  }
}

interface Sandbox {
  dir: string;
  bin: string;
  state: string;
  /** Puts these packages' programs on PATH, as if apt had installed them. */
  install(...packages: string[]): void;
  up(service: "pg" | "redis"): void;
  calls(): string[];
}

function sandbox(): Sandbox {
  const dir = mkdtempSync(path.join(os.tmpdir(), "sluice-preflight-"));
  const bin = path.join(dir, "bin");
  const available = path.join(dir, "available");
  const state = path.join(dir, "state");
  for (const d of [bin, path.join(available, "bin"), state]) mkdirSync(d, { recursive: true });
  const write = (file: string, body: string) => {
    writeFileSync(file, `#!/bin/bash\n${body}\n`);
    chmodSync(file, 0o755);
  };
  for (const tool of REAL_TOOLS) symlinkSync(execFileSync("bash", ["-c", `command -v ${tool}`]).toString().trim(), path.join(bin, tool));
  write(path.join(bin, "id"), stubBody("id"));
  write(path.join(bin, "mkdir"), stubBody("mkdir"));
  write(path.join(available, "bin", "apt-get"), stubBody("apt-get"));
  for (const [pkg, programs] of Object.entries(PACKAGES)) {
    writeFileSync(path.join(available, pkg), programs.join("\n") + "\n");
    for (const p of programs) write(path.join(available, "bin", p), stubBody(p));
  }
  writeFileSync(
    path.join(state, "pg_hba.conf"),
    "local all postgres peer\nhost all all 127.0.0.1/32 scram-sha-256\nhost all all ::1/128 scram-sha-256\n",
  );
  writeFileSync(path.join(dir, "log"), "");
  return {
    dir,
    bin,
    state,
    install(...packages) {
      for (const pkg of packages) {
        const programs = pkg === "apt-get" ? ["apt-get"] : PACKAGES[pkg];
        for (const p of programs) symlinkSync(path.join(available, "bin", p), path.join(bin, p));
      }
    },
    up(service) {
      writeFileSync(path.join(state, `${service}-up`), "");
    },
    calls() {
      return readFileSync(path.join(dir, "log"), "utf8").split("\n").filter(Boolean);
    },
  };
}

interface Run {
  code: number | null;
  stderr: string;
  stdout: string;
}

/** A service probed over TCP that a run may start: once its stub was called, a listener opens on its port (unless not `startable`). */
interface Startable {
  port: number;
  startable: boolean;
}

/** Runs the script in the sandbox; `amqp` and `nats`: listens on their ports once rabbitmq-server / nats-server was "started". */
function run(box: Sandbox, env: Record<string, string>, amqp?: Startable, nats?: Startable): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child: ChildProcessByStdio<null, Readable, Readable> = spawn("bash", [SCRIPT], {
      env: {
        PATH: box.bin,
        LOG: path.join(box.dir, "log"),
        STATE: box.state,
        BIN: box.bin,
        AVAILABLE: path.join(box.dir, "available"),
        NODE_ENV: "test",
        STUB_UID: "0",
        SLUICE_PREFLIGHT_WAIT_S: "5",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const listeners = new Map<string, net.Server>();
    const services = Object.entries({ amqp, nats }).filter((e): e is [string, Startable] => e[1]?.startable === true);
    const watch = setInterval(() => {
      for (const [name, s] of services) {
        if (!listeners.has(name) && existsSync(path.join(box.state, `${name}-started`))) {
          listeners.set(name, net.createServer((c) => c.destroy()).listen(s.port, "127.0.0.1"));
        }
      }
    }, 20);
    child.on("error", reject);
    child.on("close", (code: number | null) => {
      clearInterval(watch);
      for (const l of listeners.values()) l.close();
      resolve({ code, stdout, stderr });
    });
  });
}

const EVERYTHING = Object.keys(PACKAGES);

describe("scripts/preflight.sh (npm test's first stage)", () => {
  let box: Sandbox;
  let amqpPort: number;
  let natsPort: number;
  let pgPort: number;
  let redisPort: number;
  let amqpListener: net.Server | undefined;
  let natsListener: net.Server | undefined;
  let env: Record<string, string>;

  // Free ports, so that where the script probes over TCP (no pg_isready / redis-cli "installed")
  // it never finds the machine's real services.
  beforeEach(async () => {
    box = sandbox();
    [amqpPort, natsPort, pgPort, redisPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    env = {
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${pgPort}/test`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      AMQP_URL: `amqp://guest:guest@127.0.0.1:${amqpPort}`,
      NATS_URL: `nats://127.0.0.1:${natsPort}`,
    };
  });
  afterEach(() => {
    amqpListener?.close();
    amqpListener = undefined;
    natsListener?.close();
    natsListener = undefined;
    rmSync(box.dir, { recursive: true, force: true });
  });

  async function listen(port: number): Promise<net.Server> {
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    return server;
  }
  /** RabbitMQ and NATS answer (the services probed over TCP). */
  async function amqpUp(): Promise<void> {
    amqpListener = await listen(amqpPort);
    natsListener = await listen(natsPort);
  }

  it("passes silently and changes nothing when everything is installed and answering", async () => {
    box.install("apt-get", ...EVERYTHING);
    box.up("pg");
    box.up("redis");
    await amqpUp();
    const r = await run(box, env);
    expect(r).toMatchObject({ code: 0, stdout: "", stderr: "" });
    expect(box.calls()).toEqual([]);
  });

  it("as root on Debian, runs apt-get update first, installs everything missing and starts the services", async () => {
    box.install("apt-get");
    const r = await run(box, env, { port: amqpPort, startable: true }, { port: natsPort, startable: true });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const calls = box.calls();
    const update = calls.indexOf("apt-get update -qq");
    const install = calls.findIndex((c) => c.startsWith("apt-get install"));
    expect(update).toBeGreaterThanOrEqual(0);
    expect(install).toBeGreaterThan(update);
    expect(calls[install]).toBe("apt-get install -y -qq chromium nginx-light wrk nghttp2-client redis-server nats-server postgresql rabbitmq-server");
    expect(calls).toContain("pg_ctlcluster --skip-systemctl-redirect 15 main start");
    expect(calls).toContain(
      `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port ${redisPort} --save  --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log`,
    );
    expect(calls).toContain("rabbitmq-server -detached");
    expect(calls).toContain(`nats-server -a 127.0.0.1 -p ${natsPort} -js -sd /var/lib/nats-server -l /var/log/nats-server.log`);
    // A PostgreSQL it installed is set up as the tests expect: trust on loopback, the database made.
    expect(readFileSync(path.join(box.state, "pg_hba.conf"), "utf8")).toBe(
      "local all postgres peer\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n",
    );
    expect(calls).toContain(`createdb -h 127.0.0.1 -p ${pgPort} -U postgres test`);
  });

  it("as root on Debian, only starts a service that is installed but down, and installs nothing", async () => {
    box.install("apt-get", ...EVERYTHING);
    box.up("pg");
    await amqpUp();
    const r = await run(box, env);
    expect(r.code).toBe(0);
    expect(box.calls()).toEqual([
      "mkdir -p /var/lib/redis /var/log/redis",
      `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port ${redisPort} --save  --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log`,
    ]);
  });

  it("not root: stops at once, lists what is missing, prints the one command, and runs nothing", async () => {
    box.install("apt-get", "redis-server", "postgresql");
    box.up("redis");
    const started = Date.now();
    const r = await run(box, { ...env, STUB_UID: "1000" });
    expect(Date.now() - started).toBeLessThan(4_000); // nothing waited for
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("- Chromium is not installed");
    expect(r.stderr).toContain("- nginx is not installed");
    expect(r.stderr).toContain("- wrk is not installed");
    expect(r.stderr).toContain("- h2load is not installed");
    expect(r.stderr).toContain(`- PostgreSQL at 127.0.0.1:${pgPort} (DATABASE_URL) does not answer`);
    expect(r.stderr).toContain(`- RabbitMQ at 127.0.0.1:${amqpPort} (AMQP_URL) does not answer`);
    expect(r.stderr).toContain("- nats-server is not installed");
    expect(r.stderr).toContain(`- NATS at 127.0.0.1:${natsPort} (NATS_URL) does not answer`);
    expect(r.stderr).not.toContain("Redis at");
    expect(r.stderr).toContain("Run this, then npm test again:\n  sudo --preserve-env=DATABASE_URL,REDIS_URL,AMQP_URL,NATS_URL bash scripts/preflight.sh\n");
    expect(r.stderr).toContain(
      `(as root on Debian it runs: apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium nginx-light wrk nghttp2-client nats-server rabbitmq-server && pg_ctlcluster --skip-systemctl-redirect <version> main start && rabbitmq-server -detached && mkdir -p /var/lib/nats-server && (nats-server -a 127.0.0.1 -p ${natsPort} -js -sd /var/lib/nats-server -l /var/log/nats-server.log &))`,
    );
    expect(box.calls()).toEqual([]);
  });

  it("not Debian (no apt-get), even as root: says what to install and start, and runs nothing", async () => {
    box.install("redis-server");
    box.up("redis");
    await amqpUp();
    const r = await run(box, env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("- Chromium is not installed");
    expect(r.stderr).toContain(`- PostgreSQL at 127.0.0.1:${pgPort} (DATABASE_URL) does not answer`);
    expect(r.stderr).toContain("Install chromium nginx-light wrk nghttp2-client nats-server postgresql (Debian's package names) and start the services above");
    expect(box.calls()).toEqual([]);
  });

  it("a service on another host that does not answer is named with its variable, and nothing is started for it", async () => {
    box.install("apt-get", ...EVERYTHING);
    box.up("redis");
    await amqpUp();
    const r = await run(box, { ...env, DATABASE_URL: "postgresql://app:secret@db.internal:6543/sluice" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "- PostgreSQL at db.internal:6543 (DATABASE_URL) does not answer: start it, or point DATABASE_URL at one that runs",
    );
    expect(r.stderr).not.toContain("secret");
    expect(box.calls()).toEqual([]);
  });

  it("a CHROMIUM_PATH that is not there is reported, not papered over by an install", async () => {
    box.install("apt-get", ...EVERYTHING);
    box.up("pg");
    box.up("redis");
    await amqpUp();
    const r = await run(box, { ...env, CHROMIUM_PATH: path.join(box.dir, "no-such-chromium") });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`CHROMIUM_PATH=${path.join(box.dir, "no-such-chromium")} is not an executable`);
    expect(box.calls()).toEqual([]);
  });

  it("a service that was started but never answers fails with its name, not later in a test", async () => {
    box.install("apt-get", ...EVERYTHING);
    box.up("pg");
    box.up("redis");
    const r = await run(box, { ...env, SLUICE_PREFLIGHT_WAIT_S: "1" }, { port: amqpPort, startable: false });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("RabbitMQ was started but does not answer after 1 s");
    expect(box.calls()).toEqual(["rabbitmq-server -detached"]);
  });
});
