import { expect } from "vitest";
import { ServiceError } from "../errors";

/** The ServiceError `p` rejects with; fails the test when it resolves or rejects with anything else. */
export async function serviceError(p: Promise<unknown>): Promise<ServiceError> {
  const error = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
}
