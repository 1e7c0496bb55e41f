import { describe, expect, it } from 'vitest';
import { controlCharacterIn, requireNoControlCharacters } from './control-characters.js';
import { InvalidArgumentError } from './errors.js';

describe('control characters', () => {
  it.each([
    ['pvc-1', null],
    ['ünïcödé name', null],
    ['a\nb', 'U+000A'],
    ['tab\there', 'U+0009'],
    ['nul\0', 'U+0000'],
    ['esc\u001b[31m', 'U+001B'],
    ['del\u007f', 'U+007F'],
    ['c1\u0085', 'U+0085'],
  ])('%j → %s', (text, found) => {
    expect(controlCharacterIn(text)).toBe(found);
  });

  it('refuses with InvalidArgumentError naming the role and the character', () => {
    expect(() => {
      requireNoControlCharacters('a\nb', 'volume name');
    }).toThrow(
      new InvalidArgumentError(
        'volume name must not contain control characters (newline, tab, …; found U+000A)',
      ),
    );
    expect(() => {
      requireNoControlCharacters('pvc-1', 'volume name');
    }).not.toThrow();
  });
});
