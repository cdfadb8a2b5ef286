import type { ProviderConfig } from '../config/config-file.js';
import { AnthropicProvider } from './anthropic.js';
import { AzureOpenAIProvider } from './azure.js';
import { BedrockProvider } from './bedrock/bedrock.js';
import { GeminiProvider } from './gemini.js';
import { OpenAICompatibleProvider } from './openai-compatible.js';
import { VertexProvider } from './vertex.js';
import type { ProviderAdapter } from '../generation/provider.js';

/** The one place that knows which adapter serves which kind of provider. */
export function createProvider(config: ProviderConfig): ProviderAdapter {
  switch (config.kind) {
    case 'openai':
      return new OpenAICompatibleProvider(config);
    case 'anthropic':
      return new AnthropicProvider(config);
    case 'gemini':
      return new GeminiProvider(config);
    case 'azure':
      return new AzureOpenAIProvider(config);
    case 'bedrock':
      return new BedrockProvider(config);
    case 'vertex':
      return new VertexProvider(config);
  }
}
