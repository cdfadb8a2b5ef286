// postgres-pass: skip (in process: request shaping only, no gateway and no store)
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CatalogueModel } from '../src/catalogue/catalogue.js';
import { GatewayError } from '../src/core/errors.js';
import { generationRequest, type GenerationRequest, type ToolDefinition } from '../src/generation/model.js';
import { JSON_MODE_TOOL, toolFields, usesJsonModeTool } from '../src/providers/anthropic.js';

/** In-process: how a request's tools and JSON mode become Anthropic's `tools` and `tool_choice`. */
const model = { id: 'claude' } as CatalogueModel;

const base = generationRequest({ model: 'claude', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] });
const jsonMode = { ...base, responseFormat: { type: 'json_object' } } as const;
const weather: ToolDefinition = { name: 'get_weather', description: undefined, parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: undefined };
const jsonTool = { name: JSON_MODE_TOOL, description: (toolFields(jsonMode, model).tools as { description: string }[])[0]!.description, input_schema: { type: 'object' } };

describe('Anthropic: JSON mode as a forced tool', () => {
  test('alone, the model must call the tool that takes any object', () => {
    assert.ok(usesJsonModeTool(jsonMode));
    assert.deepEqual(toolFields(jsonMode, model), { tools: [jsonTool], tool_choice: { type: 'tool', name: JSON_MODE_TOOL, disable_parallel_tool_use: true } });
    assert.deepEqual(toolFields({ ...jsonMode, tools: [weather], toolChoice: { type: 'none' } }, model), {
      tools: [jsonTool, { name: 'get_weather', input_schema: weather.parameters }],
      tool_choice: { type: 'tool', name: JSON_MODE_TOOL, disable_parallel_tool_use: true },
    });
  });

  test("beside the caller's tools under auto, any tool: one of theirs, or the answer", () => {
    assert.deepEqual(toolFields({ ...jsonMode, tools: [weather] }, model).tool_choice, { type: 'any' });
    assert.deepEqual(toolFields({ ...jsonMode, tools: [weather], parallelToolCalls: false }, model).tool_choice, { type: 'any', disable_parallel_tool_use: true });
  });

  test('a choice that asks for a call of its own, and other formats, are as without JSON mode', () => {
    for (const toolChoice of [{ type: 'required' }, { type: 'tool', name: 'get_weather' }] as const) {
      assert.equal(usesJsonModeTool({ ...jsonMode, tools: [weather], toolChoice }), false);
      assert.deepEqual(toolFields({ ...jsonMode, tools: [weather], toolChoice }, model), toolFields({ ...base, tools: [weather], toolChoice }, model));
    }
    assert.deepEqual(toolFields(base, model), {});
    assert.equal(usesJsonModeTool({ ...base, responseFormat: { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: undefined, description: undefined } }), false);
  });

  test('with reasoning, or a caller tool of the same name, a 400 naming the parameter', () => {
    const refused = (request: GenerationRequest, param: string) =>
      assert.throws(() => toolFields(request, model), (e: unknown) => e instanceof GatewayError && e.param === param && /Model `claude`/.test(e.message));
    refused({ ...jsonMode, reasoning: { effort: 'low' } }, 'response_format');
    refused({ ...jsonMode, tools: [{ ...weather, name: JSON_MODE_TOOL }] }, 'tools');
  });
});
