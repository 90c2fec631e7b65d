import path from "node:path";
import { describe, expect, it } from "vitest";
import { controlPlaneAddress, packageRoot } from "./control-plane";
import { containerProbeUrl, probeUrl } from "./healthcheck";

describe("npm run start: where the control plane listens", () => {
  it("takes next start's flags, else PORT and every interface", () => {
    expect(controlPlaneAddress(["-p", "4100", "-H", "127.0.0.1"])).toEqual({ port: 4100, hostname: "127.0.0.1" });
    expect(controlPlaneAddress(["--port=4200"])).toEqual({ port: 4200, hostname: "0.0.0.0" });
    expect(controlPlaneAddress([])).toEqual({ port: 3000, hostname: "0.0.0.0" });
  });

  it("refuses a bad port, an empty address or an unknown flag, naming it", () => {
    expect(() => controlPlaneAddress(["-p", "70000"])).toThrow('--port: expected a port from 1 to 65535, got "70000"');
    expect(() => controlPlaneAddress(["-p", "3000x"])).toThrow('--port: expected a port from 1 to 65535, got "3000x"');
    expect(() => controlPlaneAddress(["-H", " "])).toThrow("--hostname: expected an address or a host name, got an empty one");
    expect(() => controlPlaneAddress(["--turbo"])).toThrow("Unknown option '--turbo'");
  });

  it("finds the package's root from worker/ (tsx) and from dist/server (compiled)", () => {
    const root = path.resolve(import.meta.dirname, "..");
    expect(packageRoot(import.meta.dirname)).toBe(root);
    expect(packageRoot(path.join(root, "dist", "server"))).toBe(root);
  });
});

describe("the image's health check", () => {
  const settings = { decisionPort: 8787, decisionHost: "0.0.0.0", controlPlanePort: 3000 };

  it("asks the decision server's /readyz, on its own address when it listens on one", () => {
    expect(probeUrl(["node", "--max-semi-space-size=64", "dist/server/decision-server.js"], settings)).toBe("http://127.0.0.1:8787/readyz");
    expect(probeUrl(["node", "/app/dist/server/decision-server.js"], { ...settings, decisionHost: "10.1.2.3" })).toBe("http://10.1.2.3:8787/readyz");
    expect(probeUrl(["node", "dist/server/decision-server.js"], { ...settings, decisionHost: "fd00::5" })).toBe("http://[fd00::5]:8787/readyz");
  });

  it("asks the control plane's /login on PORT, before and after Next.js renames the process", () => {
    expect(probeUrl(["node", "dist/server/control-plane.js"], { ...settings, controlPlanePort: 3100 })).toBe("http://127.0.0.1:3100/login");
    expect(probeUrl(["next-server (v16.4.6)        "], settings)).toBe("http://127.0.0.1:3000/login");
  });

  it("finds the process under an init (docker run --init, compose's init: true), which is then PID 1", () => {
    const init = ["/sbin/docker-init", "--", "sh", "deploy/docker-entrypoint.sh", "start:decision"];
    expect(containerProbeUrl([init, ["node", "--max-semi-space-size=64", "dist/server/decision-server.js"]], settings)).toBe("http://127.0.0.1:8787/readyz");
    expect(containerProbeUrl([init, ["next-server (v16.4.6)"]], settings)).toBe("http://127.0.0.1:3000/login");
    expect(containerProbeUrl([init, ["node", "dist/server/worker.js"]], settings)).toBeNull();
  });

  it("has nothing to ask the worker or a one-shot command", () => {
    expect(probeUrl(["node", "dist/server/worker.js"], settings)).toBeNull();
    expect(probeUrl(["node", "dist/server/sluice.js", "migrate"], settings)).toBeNull();
  });
});
