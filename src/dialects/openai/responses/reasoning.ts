import type { ReasoningPart } from '../../../generation/model.js';

/**
 * Reasoning items Sluice writes for an upstream that is not a Responses API carry the upstream's
 * signature (Anthropic's thinking `signature` or `redacted_thinking` data, Gemini's
 * `thoughtSignature`) in `encrypted_content`, marked with the kind of upstream it came from: a
 * signature is replayed to the same kind of upstream only, as no other can read it. OpenAI's own
 * encrypted reasoning never has this prefix.
 */
const PREFIX = 'sluice.r1.';

interface Sealed {
  /** The provider kind the reasoning came from. */
  readonly k: string;
  readonly s?: string;
  readonly r?: string;
}

/** `encrypted_content` for a reasoning part, or null when it has nothing to replay. */
export function sealReasoning(providerKind: string, part: { readonly signature?: string | undefined; readonly redactedData?: string | undefined }): string | null {
  if ((part.signature === undefined || part.signature === '') && part.redactedData === undefined) return null;
  const sealed: Sealed = { k: providerKind, ...(part.signature ? { s: part.signature } : {}), ...(part.redactedData === undefined ? {} : { r: part.redactedData }) };
  return PREFIX + Buffer.from(JSON.stringify(sealed), 'utf8').toString('base64url');
}

/** Whether the encrypted content is Sluice's (a translated upstream's), not OpenAI's. */
export function isSluiceReasoning(encrypted: unknown): boolean {
  return typeof encrypted === 'string' && encrypted.startsWith(PREFIX);
}

function unseal(encrypted: string): Sealed | undefined {
  try {
    const value = JSON.parse(Buffer.from(encrypted.slice(PREFIX.length), 'base64url').toString('utf8')) as Sealed;
    return typeof value?.k === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The reasoning part of a reasoning item, for an upstream of `providerKind`: only one that came from
 * the same kind of upstream, with its signature; otherwise none (foreign or unsigned reasoning is
 * not sent back; the upstreams that think take their own signed reasoning only).
 */
export function reasoningPartOf(item: Readonly<Record<string, unknown>>, providerKind: string): ReasoningPart | undefined {
  if (!isSluiceReasoning(item.encrypted_content)) return undefined;
  const sealed = unseal(item.encrypted_content as string);
  if (sealed === undefined || sealed.k !== providerKind) return undefined;
  const summary = Array.isArray(item.summary) ? (item.summary as { text?: unknown }[]) : [];
  const text = summary.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  if (sealed.r !== undefined) return { type: 'reasoning', text: '', redactedData: sealed.r };
  return { type: 'reasoning', text, ...(sealed.s === undefined ? {} : { signature: sealed.s }) };
}
