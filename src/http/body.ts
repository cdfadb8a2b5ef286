import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../errors.js';

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
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new GatewayError('invalid_json', 'The request body is not valid JSON.'));
      }
    });
  });
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('payload_too_large', `The request body is larger than the ${limit} bytes this gateway accepts.`);
}
