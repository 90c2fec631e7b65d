// `node scripts/when-installed.mjs PACKAGE COMMAND...`: runs COMMAND (in a shell, as npm runs a
// script) when PACKAGE is installed, else says why it skipped it and succeeds. package.json's
// install hooks go through it: `postinstall` (prisma generate, with the prisma CLI) and `prepare`
// (the SDK, with TypeScript) need dev dependencies, which a production install
// (`npm ci --omit=dev`) does not have, and production does not need either: `npm run build`,
// run where the dev dependencies are, compiles the Prisma client into its output
// (docs/production.md). With PACKAGE installed, COMMAND's failure is the install's failure.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";

const [name, ...command] = process.argv.slice(2);
if (!name || command.length === 0) {
  console.error("usage: node scripts/when-installed.mjs PACKAGE COMMAND...");
  process.exit(2);
}
const root = path.resolve(import.meta.dirname, "..");
try {
  createRequire(path.join(root, "package.json")).resolve(`${name}/package.json`);
} catch {
  console.log(`${name} is not installed (a production install): skipping \`${command.join(" ")}\``);
  process.exit(0);
}
const result = spawnSync(command.join(" "), { cwd: root, stdio: "inherit", shell: true });
process.exit(result.status ?? 1);
