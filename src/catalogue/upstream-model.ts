import { z } from 'zod';
import { ENDPOINTS, type Endpoint } from '../config/config-file.js';

/**
 * A model as an upstream's own list names it, whatever its dialect (OpenAI-compatible servers,
 * Anthropic, Gemini): what discovery, the console's import and `sluice doctor` work from.
 */
export interface UpstreamModel {
  /** The upstream's name for it, which becomes a catalogue entry's `upstream_model`. */
  readonly id: string;
  readonly displayName?: string;
  readonly description?: string;
  readonly contextWindow?: number;
  readonly maxOutputTokens?: number;
  readonly ownedBy?: string;
  /** Unix seconds. */
  readonly created?: number;
  /**
   * What the upstream's list says the model serves, where it says more than "generates text"
   * (Gemini's `supportedGenerationMethods` of an embedding model, a vLLM alias's `root` name);
   * undefined leaves it to the model's name and the provider's `discover.endpoints`.
   */
  readonly endpoints?: readonly Endpoint[];
  /**
   * The vendor's model that this entry serves under another name, where the list says (an Azure
   * deployment's `model`, `gpt-4o`): what its price is looked up by.
   */
  readonly baseModel?: string;
}

const positive = z.number().int().positive();

/** The stored form (JSON in the store): read back defensively, as any process's version may have written it. */
const upstreamModelSchema = z.object({
  id: z.string().min(1),
  displayName: z.string().min(1).optional(),
  description: z.string().optional(),
  contextWindow: positive.optional(),
  maxOutputTokens: positive.optional(),
  ownedBy: z.string().min(1).optional(),
  created: z.number().int().nonnegative().optional(),
  // An operation this version does not know (written by a newer one) leaves the model's endpoints to its name.
  endpoints: z.array(z.enum(ENDPOINTS)).min(1).optional().catch(undefined),
  baseModel: z.string().min(1).optional(),
});

/** The entries of a stored list that still read as models; anything else is dropped. */
export function readUpstreamModels(value: unknown): UpstreamModel[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    const parsed = upstreamModelSchema.safeParse(item);
    return parsed.success ? [parsed.data as UpstreamModel] : [];
  });
}
