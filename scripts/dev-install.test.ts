/**
 * scripts/dev-install.mjs, the gate of package.json's install hooks: a development install runs
 * them (and fails when they fail); a production install (`npm ci --omit=dev`) skips them.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A package with two dev dependencies, of which `installed` are in node_modules, and the gate copied in. */
function installWith(installed: string[]): void {
  dir = mkdtempSync(path.join(tmpdir(), "sluice-dev-install-"));
  mkdirSync(path.join(dir, "scripts"));
  copyFileSync(path.join(import.meta.dirname, "dev-install.mjs"), path.join(dir, "scripts", "dev-install.mjs"));
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ devDependencies: { typescript: "5", "@scope/tool": "1" } }));
  for (const name of installed) {
    mkdirSync(path.join(dir, "node_modules", name), { recursive: true });
    writeFileSync(path.join(dir, "node_modules", name, "package.json"), "{}");
  }
}

const gate = (...command: string[]) => spawnSync(process.execPath, ["scripts/dev-install.mjs", ...command], { cwd: dir, encoding: "utf8" });

describe("the install hooks' gate", () => {
  it("runs the command in a development install, and fails with it", () => {
    installWith(["typescript", "@scope/tool"]);
    expect(gate("echo", "generated")).toMatchObject({ status: 0, stdout: "generated\n" });
    expect(gate("exit 3").status).toBe(3);
  });

  it("skips it, succeeding, when a dev dependency is not installed, even if the command's own tool is", () => {
    installWith(["typescript"]);
    expect(gate("exit 3")).toMatchObject({ status: 0, stdout: "a production install (no @scope/tool among the dev dependencies): skipping `exit 3`\n" });
  });
});
