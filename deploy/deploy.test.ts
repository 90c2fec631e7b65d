/**
 * The Dockerfile, compose.yaml and deploy/kubernetes, checked against the package and the code:
 * no container engine runs where the tests run, so this is what stands between these files and a
 * deployment that cannot start. Every variable they set is one lib/env.ts reads, with a value it
 * accepts; every command is a process of the image's entrypoint, which runs a package script;
 * every probe asks a port the process listens on, on a path it serves (the decision server's paths
 * are asked for real in deploy/probes.int.test.ts); the image builds with the script
 * scripts/production-smoke.sh runs outside a container.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ENV_VARIABLES, parseEnv } from "@/lib/env";
import { MIGRATIONS_DIR } from "@/lib/db/migrate";
import { SERVER_ENTRIES, SERVER_OUTDIR } from "@/scripts/build";
import {
  composeDefault,
  dockerignoreRules,
  dockerIgnores,
  ENTRYPOINT,
  entrypointProcesses,
  KUBERNETES_DIR,
  loadCompose,
  loadKustomization,
  loadManifests,
  parseDockerfile,
  quantity,
  read,
  ROOT,
  type K8sContainer,
  type K8sObject,
} from "./testing/files";

const pkg = JSON.parse(read("package.json")) as { scripts: Record<string, string>; bin: Record<string, string> };
const DEFAULTS = parseEnv({});
const KNOWN = new Set<string>(ENV_VARIABLES);
const PROCESSES = entrypointProcesses();

/** Settings lib/env.ts reads that no deployment sets, and why. Everything else must have a home in deploy/kubernetes. */
const NOT_FOR_PRODUCTION: Record<string, string> = {
  SLUICE_DECISION_PROCESS_INDEX: "set by the decision supervisor for each process it starts",
  SLUICE_DEMO: "set by npm run demo for its children",
  SLUICE_DATA_DIR: "the demo's embedded PostgreSQL and redis-server",
  SLUICE_DEMO_TRAFFIC: "the demo's traffic generator",
  DECISION_URL: "the traffic generator's target",
  SLUICE_SERVICE_TOKEN: "the traffic generator's and `sluice certify`'s token, given where they run",
  TRAFFIC_KEYS: "the traffic generator",
  TRAFFIC_RPS: "the traffic generator",
  TRAFFIC_SECONDS: "the traffic generator",
  ALERT_WEBHOOK_ALLOW_PRIVATE: "tests only: alert webhooks to private addresses",
  SLUICE_NOTIFY_ALLOW_PRIVATE: "tests only: quota notification webhooks to private addresses",
  USER: "the operating system's",
};

/** The file under dist/server a command line runs, by SERVER_ENTRIES name, or null. */
function entryOf(command: string): string | null {
  const match = new RegExp(`(?:^|\\s)${SERVER_OUTDIR}/([a-z-]+)\\.js(?:\\s|$)`).exec(command);
  return match && match[1]! in SERVER_ENTRIES ? match[1]! : null;
}

/** The command line the entrypoint runs for a process name (its package script, or node and the bin). */
function commandOf(process: string): string {
  return process === "sluice" ? `node ${pkg.bin.sluice}` : pkg.scripts[process]!;
}

/** Whether `args` (a container's or a compose service's command) name a process the entrypoint runs. */
function expectProcess(args: readonly string[] | undefined, where: string): string {
  const name = args?.[0];
  expect(PROCESSES, `${where}: ${JSON.stringify(args)} is not a process of ${ENTRYPOINT}`).toContain(name);
  return name!;
}

/** The ports a process listens on, given its settings. */
function listens(process: string, settings: ReturnType<typeof parseEnv>): number[] {
  if (process === "start") return [settings.PORT];
  if (process === "start:decision") return [settings.DECISION_PORT, settings.SLUICE_GRPC_PORT];
  return [];
}

/** The paths a process serves its probes on: the control plane's sign-in page, the decision server's health endpoints. */
function probePaths(process: string): string[] {
  if (process === "start") return existsSync(path.join(ROOT, "app/login/page.tsx")) ? ["/login"] : [];
  if (process === "start:decision") return ["/readyz", "/healthz"];
  return [];
}

describe("package.json: the production processes", () => {
  it("each start script and the sluice bin run a compiled entry on plain node, never tsx", () => {
    for (const name of ["start", "start:decision", "start:worker"]) {
      const script = pkg.scripts[name]!;
      expect(script, name).toMatch(/^node /);
      expect(entryOf(script), `${name}: ${script}`).not.toBeNull();
    }
    expect(pkg.bin.sluice).toBe(`${SERVER_OUTDIR}/sluice.js`);
    expect(SERVER_ENTRIES.sluice).toBe("worker/cli.ts");
    // npx runs the bin file itself: node finds it by its first line.
    expect(read(SERVER_ENTRIES.sluice).split("\n")[0]).toBe("#!/usr/bin/env node");
  });

  it("the image's entrypoint accepts exactly those processes, and each runs its package command", () => {
    expect(PROCESSES.sort()).toEqual(["sluice", "start", "start:decision", "start:worker"]);
    for (const name of PROCESSES) expect(entryOf(commandOf(name)), name).not.toBeNull();
  });
});

describe("the image's entrypoint, run", () => {
  /** The entrypoint in a folder whose package.json scripts print what they were given. */
  function runEntrypoint(args: string[]): { code: number; stdout: string; stderr: string } {
    const dir = execFileSync("mktemp", ["-d"], { encoding: "utf8" }).trim();
    try {
      execFileSync("sh", ["-c", `mkdir -p "$1/deploy" && cp "$2" "$1/deploy/"`, "sh", dir, path.join(ROOT, ENTRYPOINT)]);
      const scripts = { start: "echo control-plane", "start:decision": "echo decision --flag", "start:worker": "echo worker" };
      execFileSync("sh", ["-c", `cat > "$1/package.json"`, "sh", dir], { input: JSON.stringify({ scripts, bin: { sluice: "bin.js" } }) });
      execFileSync("sh", ["-c", `printf 'console.log("sluice", process.argv.slice(2).join(" "))' > "$1/bin.js"`, "sh", dir]);
      const out = execFileSync("sh", [`${dir}/${ENTRYPOINT}`, ...args], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      return { code: 0, stdout: out, stderr: "" };
    } catch (error) {
      const e = error as { status: number; stdout: string; stderr: string };
      return { code: e.status, stdout: e.stdout, stderr: e.stderr };
    } finally {
      execFileSync("rm", ["-rf", dir]);
    }
  }

  it("runs the named script's command with the arguments after it; none means the control plane", () => {
    expect(runEntrypoint([])).toEqual({ code: 0, stdout: "control-plane\n", stderr: "" });
    expect(runEntrypoint(["start:decision", "a b", "c"])).toEqual({ code: 0, stdout: "decision --flag a b c\n", stderr: "" });
    expect(runEntrypoint(["sluice", "migrate", "--check"])).toEqual({ code: 0, stdout: "sluice migrate --check\n", stderr: "" });
  });

  it("refuses any other name, saying which it takes", () => {
    const run = runEntrypoint(["test"]);
    expect(run.code).toBe(64);
    expect(run.stderr).toContain('unknown process "test": start, start:decision, start:worker, or sluice');
  });
});

describe("Dockerfile", () => {
  const instructions = parseDockerfile(read("Dockerfile"));
  const from = instructions.filter((i) => i.keyword === "FROM");
  const runtime = from.length - 1;
  const inRuntime = (keyword: string) => instructions.filter((i) => i.stage === runtime && i.keyword === keyword);

  it("builds on Node 20 slim in two stages, and runs as an unprivileged user", () => {
    expect(from).toHaveLength(2);
    for (const f of from) expect(f.words[0]).toMatch(/^node:20(\.\d+)*-[a-z]+-slim(\s|$)/);
    const user = inRuntime("USER").at(-1)?.words[0] ?? "root";
    expect(user.split(":")[0]).not.toMatch(/^(root|0)$/);
  });

  it("builds with scripts/production-build.sh, the script scripts/production-smoke.sh runs outside a container", () => {
    const build = instructions.filter((i) => i.stage === 0 && i.keyword === "RUN").map((i) => i.text);
    expect(build).toEqual(["bash scripts/production-build.sh"]);
    expect(read("scripts/production-smoke.sh")).toMatch(/^\s*bash scripts\/production-build\.sh\s*$/m);
    const steps = read("scripts/production-build.sh").split("\n").filter((l) => /^npm /.test(l));
    expect(steps.map((s) => s.split(" --")[0])).toEqual(["npm ci", "npm run build", "npm prune"]);
    expect(steps[2]).toContain("--omit=dev");
  });

  it("copies into the runtime what the processes read: the pruned packages, the build's output, the migrations, the entrypoint", () => {
    const copied = inRuntime("COPY").map((i) => {
      expect(i.flags.from, i.text).toBe(from[0]!.text.split(/\s+AS\s+/i)[1]);
      return i.text.split(/\s+/)[0]!.replace(/^\/app\//, "");
    });
    const migrations = path.relative(ROOT, MIGRATIONS_DIR);
    expect(copied.sort()).toEqual(["package.json", "node_modules", "dist", ".next/standalone", migrations, ENTRYPOINT].sort());
    expect(SERVER_OUTDIR.startsWith("dist/")).toBe(true);
  });

  it("sets only variables lib/env.ts reads, with values it accepts", () => {
    const env = Object.fromEntries(inRuntime("ENV").map((i) => i.text.split("=", 2) as [string, string]));
    for (const name of Object.keys(env)) expect(KNOWN, name).toContain(name);
    expect(() => parseEnv(env)).not.toThrow();
  });

  it("exposes the ports the processes listen on by default", () => {
    const exposed = inRuntime("EXPOSE").flatMap((i) => i.text.split(/\s+/).map(Number));
    expect(exposed.sort()).toEqual([DEFAULTS.PORT, DEFAULTS.DECISION_PORT, DEFAULTS.SLUICE_GRPC_PORT].sort());
  });

  it("checks health with the compiled health check, and runs the entrypoint with the control plane as the default", () => {
    const [health] = inRuntime("HEALTHCHECK");
    expect(health?.words).toEqual(["node", `${SERVER_OUTDIR}/healthcheck.js`]);
    expect(SERVER_ENTRIES.healthcheck).toBe("worker/healthcheck.ts");
    expect(inRuntime("ENTRYPOINT").at(-1)?.words).toEqual(["sh", ENTRYPOINT]);
    expect(expectProcess(inRuntime("CMD").at(-1)?.words, "CMD")).toBe("start");
  });
});

describe(".dockerignore", () => {
  const ignored = dockerIgnores(dockerignoreRules(read(".dockerignore")));

  it("leaves out no committed file: the image builds from the repository as committed", () => {
    const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean);
    expect(tracked.length).toBeGreaterThan(100);
    expect(tracked.filter(ignored)).toEqual([]);
  });

  it("leaves out what a checkout grows: installed packages, builds, local data and secrets", () => {
    for (const file of ["node_modules/next/package.json", ".next/BUILD_ID", "dist/server/sluice.js", "lib/generated/prisma/client.ts", ".data/pg/PG_VERSION", ".env", ".git/HEAD"]) {
      expect(ignored(file), file).toBe(true);
    }
  });
});

describe("compose.yaml", () => {
  const { services } = loadCompose();
  const sluice = Object.entries(services).filter(([, s]) => s.build === ".");

  it("runs PostgreSQL, Redis, the migration once, and the three processes, all from this repository's Dockerfile", () => {
    expect(Object.keys(services).sort()).toEqual(["control-plane", "decision", "migrate", "postgres", "redis", "worker"]);
    const processes = Object.fromEntries(sluice.map(([name, s]) => [name, s.command?.join(" ")]));
    expect(processes).toEqual({ migrate: "sluice migrate", "control-plane": "start", decision: "start:decision", worker: "start:worker" });
    expect(services.migrate!.restart).toBe("no");
    for (const [name, s] of sluice) {
      expect(s.image, name).toBe("sluice:local");
      expectProcess(s.command, name);
      expect(s.depends_on?.[name === "migrate" ? "postgres" : "migrate"]?.condition, name).toBe(name === "migrate" ? "service_healthy" : "service_completed_successfully");
    }
    expect(services.postgres!.healthcheck?.test).toContain("pg_isready");
    expect(services.redis!.healthcheck?.test).toContain("redis-cli");
  });

  it("sets only variables lib/env.ts reads, with values it accepts, pointing at the compose services", () => {
    for (const [name, s] of sluice) {
      const env = Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, composeDefault(String(v))]));
      for (const key of Object.keys(env)) expect(KNOWN, `${name}: ${key}`).toContain(key);
      const settings = parseEnv(env);
      expect(new URL(settings.DATABASE_URL!).hostname, name).toBe("postgres");
      expect(new URL(settings.REDIS_URL!).hostname, name).toBe("redis");
    }
  });

  it("publishes the ports each process listens on, and only those", () => {
    for (const [name, s] of sluice) {
      const settings = parseEnv(Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, composeDefault(String(v))])));
      const published = (s.ports ?? []).map((p) => Number(p.split(":").at(-1)));
      expect(published.sort(), name).toEqual(listens(s.command![0]!, settings).sort());
    }
  });
});

describe("deploy/kubernetes", () => {
  const objects = loadManifests();
  const kustomization = loadKustomization();
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const config = byKind("ConfigMap");
  const secrets = byKind("Secret");
  const workloads = objects.filter((o) => o.kind === "Deployment" || o.kind === "Job");
  const containersOf = (o: K8sObject): K8sContainer[] => [...(o.spec!.template!.spec.initContainers ?? []), ...o.spec!.template!.spec.containers];
  /** A container's settings: its ConfigMap, then its own env (the Secret's values are placeholders to fill). */
  const settingsOf = (c: K8sContainer) => ({ ...config[0]!.data, ...Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value])) });
  const decision = workloads.find((o) => o.metadata.name === "sluice-decision")!;
  const decisionContainer = decision.spec!.template!.spec.containers[0]!;

  it("the kustomization applies every manifest, with one image name for every container", () => {
    const files = [...new Set(objects.map((o) => o.file))];
    expect([...kustomization.resources].sort()).toEqual(files.sort());
    expect(kustomization.images.map((i) => i.name)).toEqual(["sluice"]);
    for (const w of workloads) for (const c of containersOf(w)) expect(c.image, `${w.metadata.name}/${c.name}`).toBe("sluice");
  });

  it("has a ConfigMap and a Secret holding every production setting of lib/env.ts, and nothing else", () => {
    expect(config).toHaveLength(1);
    expect(secrets).toHaveLength(1);
    const set = new Set([...Object.keys(config[0]!.data ?? {}), ...Object.keys(secrets[0]!.stringData ?? {})]);
    for (const w of workloads) for (const c of containersOf(w)) for (const e of c.env ?? []) set.add(e.name);
    for (const name of set) expect(KNOWN, `${name} is set in ${KUBERNETES_DIR} but lib/env.ts reads no such variable`).toContain(name);
    for (const name of Object.keys(NOT_FOR_PRODUCTION)) expect(KNOWN, `NOT_FOR_PRODUCTION lists ${name}, which lib/env.ts no longer reads`).toContain(name);
    const missing = ENV_VARIABLES.filter((name) => !set.has(name) && !(name in NOT_FOR_PRODUCTION));
    expect(missing, `settings lib/env.ts reads that ${KUBERNETES_DIR} neither sets nor lists as not for production`).toEqual([]);
    for (const name of ["DATABASE_URL", "REDIS_URL", "NEXTAUTH_SECRET"]) expect(Object.keys(secrets[0]!.stringData ?? {})).toContain(name);
  });

  it("every container runs a process of the image, with the ConfigMap and the Secret, and settings lib/env.ts accepts", () => {
    for (const w of workloads) {
      for (const c of containersOf(w)) {
        const where = `${w.metadata.name}/${c.name}`;
        expectProcess(c.args, where);
        expect(c.envFrom, where).toEqual([{ configMapRef: { name: config[0]!.metadata.name } }, { secretRef: { name: secrets[0]!.metadata.name } }]);
        expect(() => parseEnv(settingsOf(c)), where).not.toThrow();
      }
      expect(w.spec!.template!.spec.securityContext, w.metadata.name).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    }
  });

  it("probes ask a port the process listens on, on a path it serves", () => {
    let probes = 0;
    for (const w of workloads) {
      for (const c of containersOf(w)) {
        const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
        const process = c.args![0]!;
        expect([...ports.values()].sort(), `${w.metadata.name}/${c.name} ports`).toEqual(listens(process, parseEnv(settingsOf(c))).sort());
        for (const probe of [c.readinessProbe, c.livenessProbe]) {
          if (!probe) continue;
          probes += 1;
          expect(ports.has(probe.httpGet.port), `${c.name}: probe port ${probe.httpGet.port}`).toBe(true);
          expect(probePaths(process), `${c.name}: probe path ${probe.httpGet.path}`).toContain(probe.httpGet.path);
        }
      }
    }
    expect(probes).toBe(4);
    expect(decisionContainer.readinessProbe?.httpGet.path).toBe("/readyz");
  });

  it("Services reach the pods by their labels and their named ports", () => {
    for (const service of byKind("Service")) {
      const target = workloads.find((w) => Object.entries(service.spec!.selector!).every(([k, v]) => w.spec!.template!.metadata.labels[k] === v));
      expect(target, service.metadata.name).toBeDefined();
      const names = target!.spec!.template!.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name));
      for (const port of service.spec!.ports!) expect(names, `${service.metadata.name}: ${port.name}`).toContain(port.targetPort);
    }
  });

  it("the decision server drains on the way out and is sized as the README's sizing table plans", () => {
    const pod = decision.spec!.template!.spec;
    const preStop = decisionContainer.lifecycle?.preStop?.exec.command;
    expect(preStop?.[0]).toBe("sleep");
    // The supervisor gives its processes 30 s to drain after SIGTERM (worker/decision/supervisor.ts).
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(preStop?.[1]) + 30);
    const processes = parseEnv(settingsOf(decisionContainer)).SLUICE_DECISION_PROCESSES!;
    const { requests = {}, limits = {} } = decisionContainer.resources ?? {};
    // One decision process is one core; each holds up to 275 MB resident under load.
    expect(quantity(requests.cpu!)).toBe(processes);
    expect(quantity(limits.cpu!)).toBe(processes);
    expect(quantity(requests.memory!)).toBeGreaterThanOrEqual(processes * 275e6);
    expect(quantity(limits.memory!)).toBeGreaterThanOrEqual(quantity(requests.memory!));
  });

  it("the decision server scales on CPU at the planned 60%, up to SLUICE_INSTANCES, and loses one pod at a time", () => {
    const [hpa] = byKind("HorizontalPodAutoscaler");
    expect(hpa!.spec!.scaleTargetRef).toMatchObject({ kind: "Deployment", name: decision.metadata.name });
    expect(hpa!.spec!.metrics).toEqual([expect.objectContaining({ resource: { name: "cpu", target: expect.objectContaining({ averageUtilization: 60 }) } })]);
    expect(hpa!.spec!.maxReplicas).toBe(parseEnv(settingsOf(decisionContainer)).SLUICE_INSTANCES);
    const [pdb] = byKind("PodDisruptionBudget");
    expect(pdb!.spec!.selector!.matchLabels).toEqual(decision.spec!.template!.metadata.labels);
    expect(pdb!.spec!.maxUnavailable).toBe(1);
    expect(hpa!.spec!.minReplicas).toBeGreaterThan(1);
  });

  it("the migration Job runs sluice migrate once; what reads PostgreSQL waits for it", () => {
    const [job] = byKind("Job");
    expect(job!.spec!.template!.spec.restartPolicy).toBe("Never");
    expect(job!.spec!.template!.spec.containers.map((c) => c.args)).toEqual([["sluice", "migrate"]]);
    for (const name of ["sluice-control-plane", "sluice-worker"]) {
      const pod = workloads.find((w) => w.metadata.name === name)!.spec!.template!.spec;
      expect(pod.initContainers?.map((c) => c.args), name).toEqual([["sluice", "migrate", "--check"]]);
    }
  });
});
