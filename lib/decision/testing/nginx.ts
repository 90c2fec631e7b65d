/**
 * examples/gateways/nginx.conf under Debian's nginx, for the tests that put a real decision server
 * behind it (gateways.int.test.ts, client-address.int.test.ts). The example's addresses become this
 * run's: the decision server's port, a free gateway port and a free app port, its /tmp/gw paths a
 * temporary directory. `npm test` makes sure nginx is installed (scripts/preflight.sh).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../net/ports";

const EXAMPLE = path.resolve(import.meta.dirname, "../../../examples/gateways/nginx.conf");
/** The service token the example carries; the decision server under test must accept it. */
export const NGINX_EXAMPLE_TOKEN = "sl_svc_gateway_test_token_0001";
const EXAMPLE_DECISION = "127.0.0.1:8788";
const EXAMPLE_GATEWAY = "127.0.0.1:9080";
const EXAMPLE_APP = "127.0.0.1:9100";

export function hasNginx(): boolean {
  try {
    execFileSync("nginx", ["-v"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export interface RunningNginx {
  /** http://127.0.0.1:<port> of the gateway. */
  url: string;
  /** The configuration it runs (the example with this run's addresses). */
  conf: string;
  stop(): void;
}

/** Starts nginx on the example configuration, in front of the decision server on `decisionPort`. */
export async function startExampleNginx(decisionPort: number): Promise<RunningNginx> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "sluice-nginx-"));
  // nginx's workers run as nobody: they must reach the temp paths.
  chmodSync(dir, 0o755);
  const [gatewayPort, appPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${gatewayPort}`;
  const conf = readFileSync(EXAMPLE, "utf8")
    .replaceAll(EXAMPLE_DECISION, `127.0.0.1:${decisionPort}`)
    .replaceAll(EXAMPLE_GATEWAY, `127.0.0.1:${gatewayPort}`)
    .replaceAll(EXAMPLE_APP, `127.0.0.1:${appPort}`)
    .replaceAll("/tmp/gw", dir);
  writeFileSync(path.join(dir, "nginx.conf"), conf);
  const nginx: ChildProcess = spawn("nginx", ["-p", dir, "-c", path.join(dir, "nginx.conf"), "-g", "daemon off;"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  nginx.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  nginx.once("exit", (code) => {
    if (code !== 0 && code !== null) process.stderr.write(`nginx exited ${code}: ${stderr}\n`);
  });
  const stop = () => {
    nginx.kill("SIGQUIT");
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (await fetch(`${url}/`).then(() => true, () => false)) break;
    if (Date.now() > deadline) {
      stop();
      throw new Error(`nginx did not come up: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, conf, stop };
}
