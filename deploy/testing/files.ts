/**
 * The deployment files as data, for deploy/deploy.test.ts: the Dockerfile's instructions, the
 * .dockerignore rules, the compose file, the Kubernetes manifests and the names the image's
 * entrypoint accepts. Parsers for what these files use, not for every feature of their formats.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse, parseAllDocuments } from "yaml";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

// ---- Dockerfile

export interface Instruction {
  /** Index of the stage (FROM) it belongs to; FROM itself opens it. */
  stage: number;
  keyword: string;
  /** `--from=build`, `--chown=…`, `--interval=…` and the like, by name. */
  flags: Record<string, string>;
  /** The exec form's words (JSON array) or the shell form's text as one word. */
  words: string[];
  /** The arguments after the flags, as written. */
  text: string;
}

/** Instructions in order, with continuation lines joined and comments dropped. */
export function parseDockerfile(source: string): Instruction[] {
  const logical: string[] = [];
  let pending = "";
  for (const line of source.split("\n")) {
    if (/^\s*#/.test(line) && pending === "") continue;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const joined = (pending + line).trim();
    pending = "";
    if (joined !== "") logical.push(joined);
  }
  let stage = -1;
  return logical.map((line) => {
    const [keyword = "", ...rest] = line.split(/\s+/);
    const upper = keyword.toUpperCase();
    if (upper === "FROM") stage += 1;
    const flags: Record<string, string> = {};
    while (rest[0]?.startsWith("--")) {
      const [name, value = ""] = rest.shift()!.slice(2).split("=", 2);
      flags[name!] = value;
    }
    // HEALTHCHECK's own command follows CMD.
    if (upper === "HEALTHCHECK" && rest[0] === "CMD") rest.shift();
    const text = rest.join(" ");
    const words = text.startsWith("[") ? (JSON.parse(text) as string[]) : [text];
    return { stage, keyword: upper, flags, words, text };
  });
}

// ---- .dockerignore

/**
 * Whether `.dockerignore` leaves `file` (relative, `/`-separated) out of the build context. Docker
 * matches each rule from the context's root (unlike .gitignore); a rule names the path or one of
 * its folders; `*` matches within one name; a later `!rule` takes a path back.
 */
export function dockerIgnores(rules: readonly string[]): (file: string) => boolean {
  const compiled = rules.map((rule) => {
    const negate = rule.startsWith("!");
    const pattern = (negate ? rule.slice(1) : rule).replace(/^\/+|\/+$/g, "");
    const source = pattern.split("/").map((part) => part.split("*").map(escapeRegExp).join("[^/]*")).join("/");
    return { negate, regexp: new RegExp(`^${source}(/.*)?$`) };
  });
  return (file) => compiled.reduce((ignored, rule) => (rule.regexp.test(file) ? !rule.negate : ignored), false);
}

export function dockerignoreRules(source: string): string[] {
  return source
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

// ---- compose.yaml

export interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  restart?: string;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

export function loadCompose(): { services: Record<string, ComposeService> } {
  // `<<:` merge keys are YAML 1.1; compose reads them, so parse them as it does.
  return parse(read("compose.yaml"), { merge: true }) as { services: Record<string, ComposeService> };
}

/** `${NAME:-default}` as compose resolves it with NAME unset. */
export function composeDefault(value: string): string {
  return value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, "$1");
}

// ---- Kubernetes

export const KUBERNETES_DIR = "deploy/kubernetes";

export interface K8sContainer {
  name: string;
  image: string;
  args?: string[];
  env?: { name: string; value: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
  lifecycle?: { preStop?: { exec: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

export interface PodSpec {
  containers: K8sContainer[];
  initContainers?: K8sContainer[];
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
}

export interface K8sObject {
  file: string;
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  // Deployment, Job, Service, HorizontalPodAutoscaler, PodDisruptionBudget, ConfigMap, Secret: what the tests read.
  spec?: {
    template?: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    selector?: { matchLabels?: Record<string, string> } & Record<string, string>;
    ports?: { name: string; port: number; targetPort: string }[];
    scaleTargetRef?: { kind: string; name: string };
    minReplicas?: number;
    maxReplicas?: number;
    metrics?: { resource: { name: string; target: { averageUtilization: number } } }[];
    maxUnavailable?: number;
  };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** Every object of every manifest in deploy/kubernetes (the kustomization apart). */
export function loadManifests(): K8sObject[] {
  const files = readdirSync(path.join(ROOT, KUBERNETES_DIR)).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
  return files.flatMap((file) =>
    parseAllDocuments(read(`${KUBERNETES_DIR}/${file}`)).map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      return { file, ...(doc.toJS() as Omit<K8sObject, "file">) };
    }),
  );
}

export function loadKustomization(): { resources: string[]; images: { name: string }[] } {
  return parse(read(`${KUBERNETES_DIR}/kustomization.yaml`)) as { resources: string[]; images: { name: string }[] };
}

/** A quantity (`2`, `250m`, `640Mi`) in its base unit: cores, or bytes. */
export function quantity(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi)?$/.exec(value);
  if (!match) throw new Error(`not a quantity: ${value}`);
  const scale = { m: 1e-3, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[match[2] ?? ""] ?? 1;
  return Number(match[1]) * scale;
}

// ---- the image's entrypoint

export const ENTRYPOINT = "deploy/docker-entrypoint.sh";

/** The process names deploy/docker-entrypoint.sh accepts, from its `case` labels. */
export function entrypointProcesses(): string[] {
  const labels = [...read(ENTRYPOINT).matchAll(/^\s+([a-z:| ]+)\)\s*$/gm)].map((m) => m[1]!);
  return labels.flatMap((label) => label.split("|").map((name) => name.trim()));
}
