import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DECISION_NODE_FLAGS, withDecisionFlags } from "./process-flags";

describe("the decision process's Node.js flags", () => {
  it("npm run decision passes every one of them", () => {
    const pkg = JSON.parse(readFileSync(path.join(import.meta.dirname, "../../package.json"), "utf8")) as { scripts: Record<string, string> };
    for (const flag of DECISION_NODE_FLAGS) expect(pkg.scripts.decision!.split(" ")).toContain(flag);
  });

  it("adds the missing ones and keeps one the operator set", () => {
    expect(withDecisionFlags(["--import", "tsx"])).toEqual(["--import", "tsx", ...DECISION_NODE_FLAGS]);
    expect(withDecisionFlags(["--max-semi-space-size=16"])).toEqual(["--max-semi-space-size=16"]);
  });
});
