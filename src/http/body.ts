import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../core/errors.js';

/** Reads a whole JSON request body, refusing more than `limit` bytes. */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('error', reject);
    req.once('end', () => {
      if (size > limit) return;
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
      if (text.trim() === '') {
        reject(new GatewayError('invalid_json', 'The request body is empty; send a JSON object.'));
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        reject(new GatewayError('invalid_json', 'The request body is not valid JSON.'));
        return;
      }
      const tooDeep = fieldNestedTooDeep(body);
      if (tooDeep === undefined) resolve(body);
      else reject(new GatewayError('invalid_request', `The field \`${tooDeep}\` nests objects or arrays more than ${MAX_JSON_DEPTH} levels deep.`, { param: tooDeep }));
    });
  });
}

/**
 * Far deeper than any real request (tool schemas nest a few levels), far shallower than what would
 * overflow the stack when Sluice writes the body again for an upstream.
 */
export const MAX_JSON_DEPTH = 64;

/** The top-level field whose value nests deeper than MAX_JSON_DEPTH, if any; without recursion. */
function fieldNestedTooDeep(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const stack: { value: object; depth: number; field: string }[] = [];
  for (const [field, value] of Object.entries(body)) if (value !== null && typeof value === 'object') stack.push({ value, depth: 2, field });
  while (stack.length > 0) {
    const { value, depth, field } = stack.pop()!;
    if (depth > MAX_JSON_DEPTH) return field;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (child !== null && typeof child === 'object') stack.push({ value: child as object, depth: depth + 1, field });
    }
  }
  return undefined;
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('payload_too_large', `The request body is larger than the ${limit} bytes this gateway accepts.`);
}
