import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { actionOriginRefusal } from "./origin";

const h = (values: Record<string, string>) => new Headers(values);

describe("server actions refuse requests not from this site", () => {
  it("refuses no Origin (Next.js itself runs those), another host, and 'null'; accepts this host, behind a proxy too", () => {
    expect(actionOriginRefusal(h({ host: "sluice.local" }))).toMatchObject({ ok: false, status: 403 });
    expect(actionOriginRefusal(h({ host: "sluice.local", origin: "https://evil.example" }))).toMatchObject({ status: 403 });
    expect(actionOriginRefusal(h({ host: "sluice.local", origin: "null" }))).toMatchObject({ status: 403 });
    expect(actionOriginRefusal(h({ host: "sluice.local", origin: "http://sluice.local.evil.example" }))).toMatchObject({ status: 403 });
    expect(actionOriginRefusal(h({ host: "sluice.local", origin: "http://sluice.local" }))).toBeNull();
    expect(actionOriginRefusal(h({ host: "10.0.0.5:3000", "x-forwarded-host": "sluice.example.com", origin: "https://sluice.example.com" }))).toBeNull();
    expect(actionOriginRefusal(h({ host: "sluice.example.com", "x-forwarded-host": "evil.example", origin: "https://sluice.example.com" }))).toMatchObject({ status: 403 });
  });

  it("every exported server action runs through guardAction (which checks the Origin first)", () => {
    const root = path.resolve(import.meta.dirname, "../../app");
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const p = path.join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (/\.(ts|tsx)$/.test(name) && !name.includes(".test.")) files.push(p);
      }
    };
    walk(root);
    const actionFiles = files.filter((f) => /^\s*["']use server["']/.test(readFileSync(f, "utf8")));
    expect(actionFiles.length).toBeGreaterThan(0);
    for (const file of actionFiles) {
      const text = readFileSync(file, "utf8");
      const exported = text.split(/\nexport (?=async function|function|const)/).slice(1);
      expect(exported.length, file).toBeGreaterThan(0);
      for (const chunk of exported) {
        const name = /^(?:async function|function|const)\s+(\w+)/.exec(chunk)?.[1];
        expect(chunk, `${path.relative(root, file)}: ${name} must return guardAction(…)`).toMatch(/^async function \w+\([^)]*\)[^\n]*\{\n\s*return guardAction\(/);
      }
    }
  });
});
