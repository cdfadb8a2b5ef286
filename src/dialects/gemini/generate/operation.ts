// Placeholder until the Gemini caller dialect lands (issue 11); not to be merged as is.
import { GatewayError } from '../../../errors.js';
import type { CountTokensOperation, GenerationOperation } from '../../../generation/operation.js';
import { geminiDialect } from '../dialect.js';

const notYet = (): never => {
  throw new GatewayError('route_not_found', 'Not yet.');
};

export const geminiGenerateContent: GenerationOperation<never> = {
  endpoint: 'chat',
  operation: 'generate_content',
  dialect: geminiDialect,
  credential: () => undefined,
  parse: notYet,
  modelOf: notYet,
  isStream: notYet,
  serve: notYet,
  countUsage: notYet,
};

export const geminiCountTokens: CountTokensOperation<never> = {
  endpoint: 'chat',
  dialect: geminiDialect,
  credential: () => undefined,
  parse: notYet,
  modelOf: notYet,
  serve: notYet,
};
