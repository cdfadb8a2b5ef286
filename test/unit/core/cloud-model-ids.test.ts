import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inferenceProfilePrefixOf, parseBedrockModelId, parseVertexModelId } from '../../../src/config/cloud-model-ids.js';
import { vendorModelOf } from '../../../src/pricing/vendor-model.js';
import { isAnthropicModel } from '../../../src/providers/bedrock/converse.js';
import { embeddingFamily } from '../../../src/providers/bedrock/embeddings.js';

/**
 * One reading of the clouds' model ids, and the four places that read them agreeing on every id:
 * the Bedrock adapter's wire (Claude relayed, Titan or Cohere embeddings), pricing's vendor, and
 * Vertex's publisher.
 */

// [id, profile, vendor, model, embedding family, relayed as Claude, priced as]
const BEDROCK: readonly (readonly [string, string | undefined, string | undefined, string | undefined, 'titan' | 'cohere' | undefined, boolean, string | undefined])[] = [
  ['anthropic.claude-sonnet-4-5-20250929-v1:0', undefined, 'anthropic', 'claude-sonnet-4-5-20250929-v1:0', undefined, true, 'anthropic'],
  ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'us', 'anthropic', 'claude-sonnet-4-5-20250929-v1:0', undefined, true, 'anthropic'],
  ['eu.anthropic.claude-3-7-sonnet-20250219-v1:0', 'eu', 'anthropic', 'claude-3-7-sonnet-20250219-v1:0', undefined, true, 'anthropic'],
  ['apac.anthropic.claude-sonnet-4-20250514-v1:0', 'apac', 'anthropic', 'claude-sonnet-4-20250514-v1:0', undefined, true, 'anthropic'],
  ['us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0', 'us-gov', 'anthropic', 'claude-3-5-sonnet-20240620-v1:0', undefined, true, 'anthropic'],
  ['jp.anthropic.claude-sonnet-4-5-20250929-v1:0', 'jp', 'anthropic', 'claude-sonnet-4-5-20250929-v1:0', undefined, true, 'anthropic'],
  ['au.anthropic.claude-sonnet-4-5-20250929-v1:0', 'au', 'anthropic', 'claude-sonnet-4-5-20250929-v1:0', undefined, true, 'anthropic'],
  ['global.anthropic.claude-sonnet-4-5-20250929-v1:0', 'global', 'anthropic', 'claude-sonnet-4-5-20250929-v1:0', undefined, true, 'anthropic'],
  ['global.cohere.embed-v4:0', 'global', 'cohere', 'embed-v4:0', 'cohere', false, 'cohere'],
  ['us-gov.amazon.titan-embed-text-v2:0', 'us-gov', 'amazon', 'titan-embed-text-v2:0', 'titan', false, 'amazon'],
  ['cohere.embed-english-v3', undefined, 'cohere', 'embed-english-v3', 'cohere', false, 'cohere'],
  ['amazon.titan-embed-text-v1', undefined, 'amazon', 'titan-embed-text-v1', 'titan', false, 'amazon'],
  ['amazon.nova-pro-v1:0', undefined, 'amazon', 'nova-pro-v1:0', undefined, false, 'amazon'],
  ['arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0', undefined, 'amazon', 'titan-embed-text-v2:0', 'titan', false, 'amazon'],
  ['arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0', undefined, 'anthropic', 'claude-3-5-haiku-20241022-v1:0', undefined, true, 'anthropic'],
  ['arn:aws-us-gov:bedrock:us-gov-west-1:123456789012:inference-profile/us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0', 'us-gov', 'anthropic', 'claude-3-5-sonnet-20240620-v1:0', undefined, true, 'anthropic'],
  ['arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.cohere.embed-v4:0', 'global', 'cohere', 'embed-v4:0', 'cohere', false, 'cohere'],
  ['arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6', undefined, undefined, undefined, undefined, false, undefined],
  ['arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abcdef123456', undefined, undefined, undefined, undefined, false, undefined],
  ['ai21.jamba-1-5-large-v1:0', undefined, 'ai21', 'jamba-1-5-large-v1:0', undefined, false, undefined],
  ['nodot', undefined, undefined, undefined, undefined, false, undefined],
];

describe('Bedrock model ids', () => {
  for (const [id, profile, vendor, model, family, claude, priced] of BEDROCK) {
    test(id, () => {
      assert.deepEqual(parseBedrockModelId(id), { profile, vendor, model });
      assert.equal(embeddingFamily(id), family, 'embedding family');
      assert.equal(isAnthropicModel(id), claude, 'relayed as Claude');
      assert.equal(vendorModelOf('bedrock', id)?.family, priced, 'priced as');
    });
  }

  test('a region’s own inference-profile prefix', () => {
    const table: readonly (readonly [string, string | undefined])[] = [
      ['us-east-1', 'us'],
      ['us-gov-west-1', 'us-gov'],
      ['eu-central-1', 'eu'],
      ['ap-northeast-1', 'apac'],
      ['ca-central-1', undefined],
      ['sa-east-1', undefined],
    ];
    for (const [region, prefix] of table) assert.equal(inferenceProfilePrefixOf(region), prefix, region);
  });
});

describe('Vertex AI model ids', () => {
  // [id, publisher, model as the path names it, priced as]
  const VERTEX: readonly (readonly [string, string, string, string | undefined])[] = [
    ['claude-sonnet-4-5@20250929', 'anthropic', 'claude-sonnet-4-5@20250929', 'anthropic'],
    ['publishers/anthropic/models/claude-opus-4-1@20250805', 'anthropic', 'claude-opus-4-1@20250805', 'anthropic'],
    ['projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5', 'anthropic', 'claude-sonnet-4-5', 'anthropic'],
    ['gemini-2.5-pro', 'google', 'gemini-2.5-pro', 'google'],
    ['publishers/google/models/gemini-2.5-flash', 'google', 'gemini-2.5-flash', 'google'],
    ['models/text-embedding-005', 'google', 'text-embedding-005', 'google'],
    ['publishers/meta/models/llama-3.3-70b-instruct-maas', 'meta', 'llama-3.3-70b-instruct-maas', undefined],
  ];
  for (const [id, publisher, pathModel, priced] of VERTEX) {
    test(id, () => {
      const parsed = parseVertexModelId(id);
      assert.equal(parsed.publisher, publisher);
      assert.equal(parsed.model, pathModel);
      assert.equal(vendorModelOf('vertex', id)?.family, priced, 'priced as');
    });
  }
});
