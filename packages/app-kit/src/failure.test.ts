import { describe, expect, it } from 'vitest';
import {
  describeFailure,
  EXIT_FAILED,
  messageOf,
  oneLine,
  ReportedFailure,
  type ExitRule,
} from './failure.js';

class UsageProblem extends Error {}
class Refused extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}
class NotThere extends Error {}
class NotThereHere extends NotThere {}

const RULES: readonly ExitRule[] = [
  { errors: [UsageProblem], exitCode: 2 },
  { errors: [Refused], exitCode: (error) => (error instanceof Refused ? error.code : 1) },
  { errors: [NotThere], exitCode: 1 },
];

describe('oneLine', () => {
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
  it('takes the exit code of the first rule that names a class of the error', () => {
    expect(describeFailure(new UsageProblem('bad\nflag'), RULES, { internalExitCode: 1 })).toEqual({
      exitCode: 2,
      message: 'bad; flag',
    });
    expect(describeFailure(new NotThereHere('gone'), RULES, { internalExitCode: 9 })).toEqual({
      exitCode: 1,
      message: 'gone',
    });
  });

  it('ends a reported failure with its summary and its own code, before any rule', () => {
    expect(
      describeFailure(new ReportedFailure('2 of 3 failed\nsee above'), [], { internalExitCode: 9 }),
    ).toEqual({
      exitCode: EXIT_FAILED,
      message: '2 of 3 failed; see above',
    });
    expect(
      describeFailure(new ReportedFailure('none ran', 3), RULES, { internalExitCode: 9 }),
    ).toEqual({
      exitCode: 3,
      message: 'none ran',
    });
  });

  it('asks the rule for the code a failure carries', () => {
    expect(describeFailure(new Refused('no', 3), RULES, { internalExitCode: 1 })).toEqual({
      exitCode: 3,
      message: 'no',
    });
  });

  it('reports anything else as an internal error without its stack, unless debugging', () => {
    const error = new TypeError('x is undefined\nat y');
    expect(describeFailure(error, RULES, { internalExitCode: 1 })).toEqual({
      exitCode: 1,
      message: 'internal error: x is undefined; at y',
    });
    expect(describeFailure('text', RULES, { internalExitCode: 1 }).message).toBe(
      'internal error: text',
    );
    const debug = describeFailure(error, RULES, { internalExitCode: 1, debug: true });
    expect(debug.message.split('\n')[0]).toBe('internal error: x is undefined; at y');
    expect(debug.message).toContain('TypeError: x is undefined');
  });
});
