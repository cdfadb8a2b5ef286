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

/**
 * The top-level field whose value nests deeper than MAX_JSON_DEPTH, if any (of several, the last):
 * every body is checked, so it allocates nothing per value, and its recursion stops at that depth.
 */
function fieldNestedTooDeep(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const fields = Object.keys(body);
  for (let i = fields.length - 1; i >= 0; i--) {
    const field = fields[i]!;
    const value = (body as Record<string, unknown>)[field];
    if (value !== null && typeof value === 'object' && nestsTooDeep(value, 2)) return field;
  }
  return undefined;
}

/** Whether `value`, at `depth`, or anything in it, lies deeper than MAX_JSON_DEPTH. */
function nestsTooDeep(value: object, depth: number): boolean {
  if (depth > MAX_JSON_DEPTH) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child: unknown = value[i];
      if (child !== null && typeof child === 'object' && nestsTooDeep(child, depth + 1)) return true;
    }
    return false;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = (value as Record<string, unknown>)[key];
    if (child !== null && typeof child === 'object' && nestsTooDeep(child, depth + 1)) return true;
  }
  return false;
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('payload_too_large', `The request body is larger than the ${limit} bytes this gateway accepts.`);
}
