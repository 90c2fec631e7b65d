/** Option parsers shared by the CLI's command modules. */
import { InvalidArgumentError } from "commander";

/** A policy version number ≥ 1 (commander prints the message with the option's name). */
export function parseVersionOption(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError(`${name}: expected a version number ≥ 1, got ${JSON.stringify(value)}`);
    return n;
  };
}

/** A whole number in [min, max]. */
export function parseIntOption(name: string, min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`${name}: expected a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return n;
  };
}
