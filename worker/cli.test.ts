import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram } from "./cli";

function leaves(cmd: Command, trail: string[] = []): string[][] {
  const subs = cmd.commands.filter((c) => c.name() !== "help");
  if (subs.length === 0) return [trail];
  return [trail, ...subs.flatMap((c) => leaves(c, [...trail, c.name()]))];
}

async function run(args: string[]): Promise<{ out: string; err: string; exitCode: number | null }> {
  const program = buildProgram();
  let out = "";
  let err = "";
  const capture = (c: Command) => {
    c.configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (err += s) });
    c.commands.forEach(capture);
  };
  capture(program);
  try {
    await program.parseAsync(["node", "sluice", ...args]);
    return { out, err, exitCode: null };
  } catch (error) {
    return { out, err, exitCode: (error as { exitCode: number }).exitCode };
  }
}

describe("sluice CLI", () => {
  it("answers --help on every command with exit code 0", async () => {
    const commands = leaves(buildProgram());
    expect(commands.map((c) => c.join(" "))).toEqual(
      expect.arrayContaining(["apply", "export", "publish", "rollback", "keys create", "keys revoke", "tokens create", "users create", "users unlock", "billing export", "import envoy"]),
    );
    for (const cmd of commands) {
      const r = await run([...cmd, "--help"]);
      expect(r.exitCode).toBe(0);
      expect(r.out).toMatch(/^Usage: sluice/);
    }
  });

  it("billing export names the bad option before touching any database", async () => {
    const program = buildProgram();
    await expect(program.parseAsync(["node", "sluice", "billing", "export", "--period", "2026-13"])).rejects.toThrow(
      "--period: expected a month like 2026-11",
    );
    expect((await run(["billing", "export", "--period", "2026-11", "--format", "xml"])).exitCode).toBe(1);
  });

  it("rejects a missing required option with exit code 1", async () => {
    const r = await run(["apply"]);
    expect(r.exitCode).toBe(1);
    expect(r.err).toContain("required option '-f, --file <path>' not specified");
    expect((await run(["tokens", "create", "--kind", "bogus"])).exitCode).toBe(1);
  });
});
