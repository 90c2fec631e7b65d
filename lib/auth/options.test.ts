import { describe, expect, it } from "vitest";
import type { LoginResult } from "./login";
import { authOptions, RATE_LIMITED_ERROR, withCheckedSignIn } from "./options";

type Authorize = (credentials: Record<string, string> | undefined, req: unknown) => Promise<unknown>;
const authorize = (): Authorize => (authOptions().providers[0] as unknown as { options: { authorize: Authorize } }).options.authorize;

const credentials = { email: "pat@example.com", password: "correct-horse-1" };
const checked = (result: LoginResult) => ({ credentials, result });

describe("sign-in: one request is one attempt", () => {
  it("authorize uses the result the sign-in route already counted and checked, for the same credentials", async () => {
    const ok: LoginResult = { ok: true, principal: { id: "u_1", email: credentials.email, role: "sre" } };
    await expect(withCheckedSignIn(checked(ok), () => authorize()({ ...credentials, csrfToken: "x" }, {}))).resolves.toEqual({ id: "u_1", email: credentials.email, role: "sre" });
    const invalid: LoginResult = { ok: false, reason: "invalid", message: "Wrong email or password." };
    await expect(withCheckedSignIn(checked(invalid), () => authorize()(credentials, {}))).resolves.toBeNull();
    const locked: LoginResult = { ok: false, reason: "rate_limited", message: "locked", retryAfterSeconds: 60 };
    await expect(withCheckedSignIn(checked(locked), () => authorize()(credentials, {}))).rejects.toThrow(RATE_LIMITED_ERROR);
  });
});
