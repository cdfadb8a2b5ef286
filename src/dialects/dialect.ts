import type { GatewayError } from '../errors.js';
import { openAIErrorBody } from './openai/errors.js';

/** How one family of callers is answered when something fails. */
export interface ErrorDialect {
  readonly name: 'openai' | 'anthropic' | 'gemini';
  render(error: GatewayError, requestId: string): { status: number; body: string };
}

export const openAIDialect: ErrorDialect = {
  name: 'openai',
  render: (error) => ({ status: error.status, body: openAIErrorBody(error) }),
};
