/**
 * The rejection of `promise`, for assertions on the error itself (its class,
 * fields and message).
 * @throws Error when the promise resolves instead.
 */
export async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}
