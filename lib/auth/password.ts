/** Password hashing: bcrypt (bcryptjs, pure JS) at cost 12, about 200 ms per hash on this class of machine. */
import bcrypt from "bcryptjs";

export const BCRYPT_COST = 12;
export const PASSWORD_MIN_LENGTH = 10;

export async function hashPassword(plaintext: string): Promise<string> {
  return bcrypt.hash(plaintext, BCRYPT_COST);
}

export async function verifyPassword(plaintext: string, hash: string): Promise<boolean> {
  return bcrypt.compare(plaintext, hash);
}

/**
 * A hash of nothing in particular, compared against when the account does not exist, so an
 * unknown email costs the same time as a wrong password (no user enumeration by timing).
 */
let dummyHash: string | undefined;
export async function dummyVerify(plaintext: string): Promise<void> {
  dummyHash ??= await bcrypt.hash("sluice-no-such-user", BCRYPT_COST);
  await bcrypt.compare(plaintext, dummyHash);
}
