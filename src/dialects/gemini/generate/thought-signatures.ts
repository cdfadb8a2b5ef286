/**
 * Gemini callers replay a model turn's `thoughtSignature`s as they received them, and nothing
 * else of a thought: a caller that did not ask for thoughts never saw their text, and streamed
 * thoughts come back split over several parts. An Anthropic upstream, though, refuses a tool-use
 * turn whose thinking block is not replayed whole with its signature. So when Sluice writes an
 * answer of a translated upstream, the `thoughtSignature` it puts on a part seals the reasoning
 * blocks before that part, text and upstream signature together; when the caller replays it,
 * those blocks go back to the upstream exactly as it produced them.
 *
 * The seal is base64 (Google's type for the field is bytes) of a fixed prefix and the blocks'
 * JSON. It is not secret and need not be: it carries what the caller could send in Anthropic's
 * own wire, and the upstream checks its own signature.
 */

/**
 * The placeholder Google documents for replayed calls that carry no signature (@ai-sdk/google
 * sends it): it means "none", and is never passed to another vendor as a signature.
 */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

/** A reasoning block of a translated upstream, as the upstream must get it back. */
export type SealedReasoning = { readonly text: string; readonly signature: string } | { readonly redacted: string };

/** 18 characters, a multiple of 3, so that every seal's base64 starts with the same 24 characters. */
const PREFIX = 'sluice.thought.v1:';
const PREFIX_BASE64 = Buffer.from(PREFIX, 'utf8').toString('base64');

export function sealReasoning(blocks: readonly SealedReasoning[]): string {
  return Buffer.from(PREFIX + JSON.stringify(blocks), 'utf8').toString('base64');
}

/** The blocks a seal holds, or undefined for any other signature (Google's own, the placeholder). */
export function openSeal(signature: string): SealedReasoning[] | undefined {
  if (!signature.startsWith(PREFIX_BASE64)) return undefined;
  let blocks: unknown;
  try {
    blocks = JSON.parse(Buffer.from(signature, 'base64').toString('utf8').slice(PREFIX.length));
  } catch {
    return undefined;
  }
  if (!Array.isArray(blocks)) return undefined;
  const out: SealedReasoning[] = [];
  for (const block of blocks as unknown[]) {
    const b = (block ?? {}) as Record<string, unknown>;
    if (typeof b.text === 'string' && typeof b.signature === 'string') out.push({ text: b.text, signature: b.signature });
    else if (typeof b.redacted === 'string') out.push({ redacted: b.redacted });
    else return undefined;
  }
  return out;
}
