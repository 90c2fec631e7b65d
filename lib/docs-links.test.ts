/**
 * Every relative link of the README and of docs/ resolves: the file or folder exists, and an
 * `#anchor` into a Markdown page (or within the same page) is one of that page's headings, slugged
 * as GitHub slugs them. External links (a scheme such as https:) are not followed: this is about
 * the repository's own map staying whole as pages move.
 */
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, existsSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");

/** The lines of `markdown` outside fenced code blocks (``` or ~~~), each with its 1-based number. */
function proseLines(markdown: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fence: string | null = null;
  markdown.split("\n").forEach((text, i) => {
    const opener = /^\s*(`{3,}|~{3,})/.exec(text);
    if (opener) {
      if (fence === null) fence = opener[1]![0]!;
      else if (opener[1]![0] === fence) fence = null;
      return;
    }
    if (fence === null) out.push({ text, line: i + 1 });
  });
  return out;
}

/** GitHub's heading id: the rendered text lower-cased, punctuation and symbols dropped, spaces as `-`. */
function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link or image shows its text
    .replace(/<[^>]+>/g, "") // inline HTML tags render no text
    .replace(/[`*]/g, ""); // code and emphasis markers
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a page's headings, with GitHub's `-1`, `-2` suffixes for repeated ones. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (!heading) continue;
    const base = githubSlug(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Every `[text](target)` and `![alt](target)` target outside code, with its line. */
function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  for (const { text, line } of proseLines(markdown)) {
    const prose = text.replace(/`[^`]*`/g, "``"); // inline code is not a link
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1]!, line });
  }
  return links;
}

/** The broken relative links of `file` (a path under `root`), as `file:line target: why`. */
function brokenLinks(root: string, file: string): string[] {
  const absolute = path.join(root, file);
  const markdown = readFileSync(absolute, "utf8");
  const broken: string[] = [];
  for (const { target, line } of linksOf(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check
    const [rawPath, anchor] = target.split("#", 2) as [string, string | undefined];
    const where = `${file}:${line} ${target}`;
    let decoded: string;
    try {
      decoded = decodeURIComponent(rawPath);
    } catch {
      broken.push(`${where}: malformed percent-encoding`);
      continue;
    }
    const targetPath = rawPath === "" ? absolute : path.resolve(path.dirname(absolute), decoded);
    if (targetPath !== root && !targetPath.startsWith(root + path.sep)) broken.push(`${where}: outside the repository`);
    else if (!existsSync(targetPath)) broken.push(`${where}: no such file`);
    else if (anchor !== undefined && targetPath.endsWith(".md") && !anchorsOf(readFileSync(targetPath, "utf8")).has(anchor)) {
      broken.push(`${where}: no heading with that anchor`);
    }
  }
  return broken;
}

/** README.md and every Markdown file under docs/, relative to `root`. */
function documentationFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) return walk(relative);
      return entry.name.endsWith(".md") ? [relative] : [];
    });
  return ["README.md", ...(existsSync(path.join(root, "docs")) ? walk("docs") : [])];
}

describe("the link checker", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "sluice-links-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, "docs"));
  writeFileSync(path.join(dir, "docs", "page.md"), "# A page\n\n## Every core: `SLUICE_DECISION_PROCESSES`\n\n## Twice\n\n## Twice\n");

  const check = (readme: string) => {
    writeFileSync(path.join(dir, "README.md"), readme);
    return brokenLinks(dir, "README.md");
  };

  it("accepts links to files, folders and headings that exist, as GitHub slugs them", () => {
    expect(
      check(
        [
          "# Top",
          "[page](docs/page.md) [folder](docs/) [core](docs/page.md#every-core-sluice_decision_processes)",
          "[second twice](docs/page.md#twice-1) [here](#top) ![shot](docs/page.md) [out](https://example.com/x#y)",
        ].join("\n"),
      ),
    ).toEqual([]);
  });

  it("reports a missing file, a missing anchor and a link out of the repository, with their lines", () => {
    expect(check("# Top\n\n[gone](docs/gone.md)\n[bad anchor](docs/page.md#nowhere)\n[self](#missing)\n[up](../../etc/passwd)\n")).toEqual([
      "README.md:3 docs/gone.md: no such file",
      "README.md:4 docs/page.md#nowhere: no heading with that anchor",
      "README.md:5 #missing: no heading with that anchor",
      "README.md:6 ../../etc/passwd: outside the repository",
    ]);
  });

  it("ignores what is code: fenced blocks (headings in them are not anchors) and inline code", () => {
    expect(check("# Top\n\n```yaml\n# not a heading\n[x](nowhere.md)\n```\n`[y](nowhere.md)`\n[z](#not-a-heading)\n")).toEqual([
      "README.md:8 #not-a-heading: no heading with that anchor",
    ]);
  });

  it("slugs headings as GitHub does", () => {
    expect(githubSlug("Single-node mode (no Redis)")).toBe("single-node-mode-no-redis");
    expect(githubSlug("OpenAPI: the decision API, the admin API, and your own API's limits")).toBe(
      "openapi-the-decision-api-the-admin-api-and-your-own-apis-limits",
    );
    expect(githubSlug("Settling a reserved cost: `POST /v1/settle`")).toBe("settling-a-reserved-cost-post-v1settle");
    expect(githubSlug("Side by side with wrk: `npm run bench`")).toBe("side-by-side-with-wrk-npm-run-bench");
  });
});

describe("the README's and docs' links", () => {
  it.each(documentationFiles(ROOT))("%s has no broken relative link", (file) => {
    expect(brokenLinks(ROOT, file)).toEqual([]);
  });
});
