/** Helpers for Node.js system errors (internal to header/, device/, fs/). */

/** The `code` of a Node.js system error (`ENOENT`, `EIO`, ...), or undefined. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = error.code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

/** The message of any thrown value. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
