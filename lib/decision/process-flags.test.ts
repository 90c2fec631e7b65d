import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DECISION_NODE_FLAGS, withDecisionFlags } from "./process-flags";

describe("the decision process's Node.js flags", () => {
  it("npm run decision and npm run start:decision (the compiled server, in production) pass every one of them", () => {
    const pkg = JSON.parse(readFileSync(path.join(import.meta.dirname, "../../package.json"), "utf8")) as { scripts: Record<string, string> };
    for (const script of ["decision", "start:decision"]) {
      const words = pkg.scripts[script]!.split(" ");
      for (const flag of DECISION_NODE_FLAGS) expect(words, script).toContain(flag);
    }
  });

  it("adds the missing ones and keeps one the operator set", () => {
    expect(withDecisionFlags(["--import", "tsx"])).toEqual(["--import", "tsx", ...DECISION_NODE_FLAGS]);
    expect(withDecisionFlags(["--max-semi-space-size=16"])).toEqual(["--max-semi-space-size=16"]);
  });
});
