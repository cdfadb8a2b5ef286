// Placeholder until the Anthropic caller dialect lands (issue 11); not to be merged as is.
import { GatewayError } from '../../../errors.js';
import type { CountTokensOperation, GenerationOperation } from '../../../generation/operation.js';
import { anthropicDialect } from '../dialect.js';

const notYet = (): never => {
  throw new GatewayError('route_not_found', 'Not yet.');
};

export const anthropicMessages: GenerationOperation<never> = {
  endpoint: 'chat',
  operation: 'messages',
  dialect: anthropicDialect,
  credential: () => undefined,
  parse: notYet,
  modelOf: notYet,
  isStream: notYet,
  serve: notYet,
  countUsage: notYet,
};

export const anthropicCountTokens: CountTokensOperation<never> = {
  endpoint: 'chat',
  dialect: anthropicDialect,
  credential: () => undefined,
  parse: notYet,
  modelOf: notYet,
  serve: notYet,
};
