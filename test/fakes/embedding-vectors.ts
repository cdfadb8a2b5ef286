/**
 * The fakes' embedding model: a vector derived from the text alone, so that a test can tell which
 * input a vector belongs to (and so that split batches re-joined out of order would show). Every
 * value is a multiple of 1/64 in [-8, 8), which a float32 holds exactly: a vector survives the
 * base64 of little-endian float32s unchanged.
 */
export const NATIVE_DIMENSIONS = 8;

export function fakeVector(text: string, dimensions = NATIVE_DIMENSIONS): number[] {
  let hash = 2166136261;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 16777619) >>> 0;
  return Array.from({ length: dimensions }, (_, k) => (((hash >>> (k % 24)) + k * 7919) % 1024) / 64 - 8);
}

/** The text a token-id input stands for, in the fakes' model. */
export function tokenText(ids: readonly number[]): string {
  return ids.map((id) => `<${id}>`).join('');
}
