import assert from 'node:assert/strict';
import { generateText, stepCountIs, tool, type LanguageModel } from 'ai';
import { z } from 'zod';

/**
 * The AI SDK's agent loop through Sluice: a weather tool the model calls, the SDK runs, and whose
 * result the model answers from, in two steps. Returns the result for the caller's further checks.
 */
export async function weatherInTwoSteps(model: LanguageModel) {
  const result = await generateText({
    model,
    prompt: 'What is the weather in Paris?',
    tools: { get_weather: tool({ description: 'Weather in a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `snow in ${city}` }) },
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  });
  assert.equal(result.steps.length, 2);
  assert.equal(result.steps[0]!.toolCalls[0]!.toolName, 'get_weather');
  assert.match(result.text, /snow in Paris/);
  return result;
}
