import { describe, expect, it } from 'vitest';
import {
  describeFailure,
  EXIT_FAILED,
  EXIT_USAGE,
  messageOf,
  oneLine,
  ReportedFailure,
  type FailureClasses,
} from './failure.js';

class UsageProblem extends Error {}
class NotThere extends Error {}
class NotThereHere extends NotThere {}

const CLASSES: FailureClasses = { usage: [UsageProblem], failed: [NotThere] };

describe('oneLine', () => {
  it('writes a control character other than a line break as \\xNN', () => {
    expect(oneLine('a\n  b\u001b[2J\tc ')).toBe('a; b\\x1b[2J\\x09c');
  });

  it('joins lines with "; " and trims', () => {
    expect(oneLine('  lvs failed\n  stderr: a  \n\n b ')).toBe('lvs failed; stderr: a; b');
  });
});

describe('messageOf', () => {
  it('is the message of an Error and the text of anything else', () => {
    expect(messageOf(new Error('boom'))).toBe('boom');
    expect(messageOf(42)).toBe('42');
  });
});

describe('describeFailure', () => {
  it('bad input exits 2, a known failure (or a subclass) 1, each with its message on one line', () => {
    expect(describeFailure(new UsageProblem('bad\nflag'), CLASSES)).toEqual({
      exitCode: EXIT_USAGE,
      message: 'bad; flag',
    });
    expect(describeFailure(new NotThereHere('gone'), CLASSES)).toEqual({
      exitCode: EXIT_FAILED,
      message: 'gone',
    });
  });

  it('ends a reported failure with its summary and its own code', () => {
    expect(describeFailure(new ReportedFailure('2 of 3 failed\nsee above'), CLASSES)).toEqual({
      exitCode: EXIT_FAILED,
      message: '2 of 3 failed; see above',
    });
    expect(describeFailure(new ReportedFailure('none ran', 3), CLASSES)).toEqual({
      exitCode: 3,
      message: 'none ran',
    });
  });

  it('reports anything else as an internal error without its stack, unless debugging', () => {
    const error = new TypeError('x is undefined\nat y');
    expect(describeFailure(error, CLASSES)).toEqual({
      exitCode: EXIT_FAILED,
      message: 'internal error: x is undefined; at y',
    });
    expect(describeFailure('text', CLASSES).message).toBe('internal error: text');
    const debug = describeFailure(error, CLASSES, { debug: true });
    expect(debug.message.split('\n')[0]).toBe('internal error: x is undefined; at y');
    expect(debug.message).toContain('TypeError: x is undefined');
  });
});
