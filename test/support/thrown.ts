/** What a promise was rejected with; fails the test when it was fulfilled. */
export async function thrown(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('the request succeeded');
}
