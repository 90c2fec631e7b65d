/**
 * Server actions are public POST endpoints: one runs only when the request's Origin is this site.
 * Next.js refuses another site's Origin itself but runs a request with none; guardAction refuses
 * both (docs/security.md). A real action is captured from the UI and replayed three ways.
 */
import { expect, test } from "@playwright/test";
import { signIn } from "./fixtures";

test("a server action runs only with this site's Origin: none (which Next.js itself runs) and another site's are refused", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto("/settings");
  const captured = page.waitForRequest((r) => r.method() === "POST" && r.headers()["next-action"] !== undefined);
  await page.getByTestId("users-table").getByRole("button", { name: "Unlock sign-in" }).first().click();
  const action = await captured;
  await expect(page.getByText(/can sign in again/)).toBeVisible();

  const sent = await action.allHeaders();
  const replay = async (origin: string | null) => {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(sent)) {
      if (!name.startsWith(":") && !["origin", "referer", "cookie", "host", "content-length"].includes(name)) headers[name] = value;
    }
    if (origin !== null) headers.origin = origin;
    const res = await page.request.post(action.url(), { headers, data: action.postDataBuffer() ?? "" });
    return res.text();
  };
  // The replay itself works with this site's Origin …
  expect(await replay(new URL(page.url()).origin)).toContain("can sign in again");
  // … and without one it is refused by guardAction, before the action runs.
  const none = await replay(null);
  expect(none).toContain("Cross-origin request refused");
  expect(none).not.toContain("can sign in again");
  // Another site's Origin: Next.js aborts the action itself.
  expect(await replay("https://evil.example")).not.toContain("can sign in again");
});
