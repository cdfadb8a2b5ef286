import { GatewayError } from '../core/errors.js';

/** An integer query parameter within bounds, its default when absent; 400 naming it otherwise. */
export function intParam(query: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw) || value < min || value > max) {
    throw new GatewayError('invalid_request', `Invalid '${name}': expected an integer from ${min} to ${max}, got '${raw}'.`, { param: name });
  }
  return value;
}
