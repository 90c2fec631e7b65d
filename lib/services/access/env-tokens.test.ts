import { describe, expect, it } from "vitest";
import { envServiceTokens } from "./env-tokens";
import { hashSecret } from "./secrets";

describe("service tokens from SLUICE_SERVICE_TOKENS", () => {
  it("are listed by a fingerprint of their hash, never by the secret", () => {
    const secret = "svc_from_env_token_0001";
    const hash = hashSecret("another_token_value_02");
    const listed = envServiceTokens(` ${secret}, ${hash},,${secret}`);
    expect(listed).toEqual([
      { fingerprint: hashSecret(secret).slice(0, 12), given: "plaintext" },
      { fingerprint: hash.slice(0, 12), given: "sha256" },
    ]);
    expect(JSON.stringify(listed)).not.toContain("svc_from");
    expect(envServiceTokens(undefined)).toEqual([]);
  });
});
