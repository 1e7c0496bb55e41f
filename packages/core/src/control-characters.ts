// Control characters in a name, ID or path lvstamp is given: found, or refused.
import { InvalidArgumentError } from './errors.js';

// C0 controls, DEL and C1 controls (Unicode general category Cc).
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/u;

/**
 * The first control character (Unicode category Cc: U+0000–U+001F, U+007F–U+009F)
 * in `text`, as `U+000A`, or null when there is none.
 */
export function controlCharacterIn(text: string): string | null {
  const found = CONTROL_CHARACTER.exec(text);
  if (found === null) return null;
  return `U+${found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * Refuses a name, ID or path that holds a control character (newline, tab,
 * NUL, ESC, ...): such a value breaks log lines, live-set files and lvm
 * selections, and no valid name or ID of lvstamp contains one.
 * @param what the value's role for the message, e.g. `volume name`.
 * @throws InvalidArgumentError `<what> must not contain control characters (found U+000A)`.
 */
export function requireNoControlCharacters(value: string, what: string): void {
  const found = controlCharacterIn(value);
  if (found !== null) {
    throw new InvalidArgumentError(
      `${what} must not contain control characters (newline, tab, …; found ${found})`,
    );
  }
}
