// `node scripts/dev-install.mjs COMMAND...`: runs COMMAND (in a shell, as npm runs a script) in a
// development install, and in a production install says it skipped it and succeeds. package.json's
// install hooks go through it: `postinstall` (prisma generate) and `prepare` (the SDK build) need
// dev dependencies, and production needs neither, since `npm run build`, run where the dev
// dependencies are, compiles the Prisma client into its output (docs/production.md).
//
// A production install is one without every devDependency (`npm ci --omit=dev`, NODE_ENV=production).
// Whether the step's own tool is there says nothing: @prisma/client names prisma and typescript as
// optional peers, so `npm ci --omit=dev` installs both, and tsc would then build the SDK without the
// framework types it needs. In a development install, COMMAND's failure is the install's failure.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

const command = process.argv.slice(2).join(" ");
if (command === "") {
  console.error("usage: node scripts/dev-install.mjs COMMAND...");
  process.exit(2);
}
const root = path.resolve(import.meta.dirname, "..");
// A direct dependency is always installed in the root's own node_modules.
const devDependencies = Object.keys(JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).devDependencies ?? {});
const missing = devDependencies.find((name) => !existsSync(path.join(root, "node_modules", name, "package.json")));
if (missing !== undefined) {
  console.log(`a production install (no ${missing} among the dev dependencies): skipping \`${command}\``);
  process.exit(0);
}
const result = spawnSync(command, { cwd: root, stdio: "inherit", shell: true });
process.exit(result.status ?? 1);
