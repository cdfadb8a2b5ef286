import type { ServerResponse } from 'node:http';
import { json, startFakeServer, writeEvent, type FakeUpstream } from './fake-server.js';
import { countWords, fakeLogprob, generate, type Generation } from './generation.js';

const CONFIG_FIELDS = new Set([
  'maxOutputTokens', 'stopSequences', 'candidateCount', 'temperature', 'topP', 'topK', 'seed',
  'presencePenalty', 'frequencyPenalty', 'responseLogprobs', 'logprobs',
]);

/**
 * A stand-in for Gemini's generateContent / streamGenerateContent as documented: `x-goog-api-key`
 * (a wrong one is 400 API_KEY_INVALID, as Google answers), `generationConfig` validated (≤ 5 stop
 * sequences, candidateCount 1..8, temperature 0..2, unknown names refused), errors as
 * `{"error":{code,message,status}}`, SSE of partial responses with no [DONE]. A prompt containing
 * "forbidden" is blocked (`promptFeedback.blockReason`); one containing "unsafe" gets a SAFETY stop.
 */
export async function startFakeGemini(options: { apiKey: string; models?: string[] }): Promise<FakeUpstream> {
  const models = new Set(options.models ?? ['gemini-test']);
  return startFakeServer('/v1beta', async (request, res, behaviour) => {
    const { body, headers } = request;
    if (headers['x-goog-api-key'] !== options.apiKey) {
      return json(res, 400, {
        error: {
          code: 400,
          message: 'API key not valid. Please pass a valid API key.',
          status: 'INVALID_ARGUMENT',
          details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }],
        },
      });
    }
    const match = /^\/v1beta\/models\/([^:/?]+):(generateContent|streamGenerateContent)(\?alt=sse)?$/.exec(request.path);
    if (request.method !== 'POST' || !match) return error(res, 404, 'NOT_FOUND', `Not found: ${request.path}`);
    const [, model, method, sse] = match;
    if (!models.has(model!)) return error(res, 404, 'NOT_FOUND', `models/${model} is not found for API version v1beta, or is not supported for generateContent.`);
    if (method === 'streamGenerateContent' && !sse) return error(res, 400, 'INVALID_ARGUMENT', 'this fake streams SSE only (alt=sse)');
    const config = body?.generationConfig ?? {};
    for (const name of Object.keys(config)) {
      if (!CONFIG_FIELDS.has(name)) return error(res, 400, 'INVALID_ARGUMENT', `Invalid JSON payload received. Unknown name "${name}" at 'generation_config': Cannot find field.`);
    }
    if ((config.stopSequences ?? []).length > 5) return error(res, 400, 'INVALID_ARGUMENT', 'stopSequences must have at most 5 items');
    if (config.candidateCount !== undefined && (config.candidateCount < 1 || config.candidateCount > 8)) {
      return error(res, 400, 'INVALID_ARGUMENT', 'candidateCount must be between 1 and 8');
    }
    if (config.temperature !== undefined && (config.temperature < 0 || config.temperature > 2)) {
      return error(res, 400, 'INVALID_ARGUMENT', 'temperature must be in [0.0, 2.0]');
    }
    if (config.logprobs !== undefined && !config.responseLogprobs) return error(res, 400, 'INVALID_ARGUMENT', 'logprobs requires responseLogprobs');
    const prompt = String(body?.contents?.at(-1)?.parts?.[0]?.text ?? '');
    const promptTokenCount = countWords(prompt);

    if (prompt.includes('forbidden')) {
      const blocked = { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount, totalTokenCount: promptTokenCount }, modelVersion: model };
      if (!sse) return json(res, 200, blocked);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end(`data: ${JSON.stringify(blocked)}\r\n\r\n`);
    }
    const count: number = config.candidateCount ?? 1;
    const unsafe = prompt.includes('unsafe');
    const candidates: Generation[] = Array.from({ length: count }, () =>
      unsafe ? { tokens: [' Hmm'], finishReason: 'stop' as const, stop: null } : generate(prompt, config.maxOutputTokens ?? 8192, config.stopSequences ?? [], { lead: true }),
    );
    const finishOf = (g: Generation) => (unsafe ? 'SAFETY' : g.finishReason === 'length' ? 'MAX_TOKENS' : 'STOP');
    const logprobsOf = (tokens: string[], start: number) => ({
      topCandidates: tokens.map((token, i) => ({ candidates: [{ token, tokenId: 7, logProbability: fakeLogprob(start + i) }, { token: ' alt', tokenId: 8, logProbability: fakeLogprob(start + i) - 1 }].slice(0, config.logprobs ?? 0) })),
      chosenCandidates: tokens.map((token, i) => ({ token, tokenId: 7, logProbability: fakeLogprob(start + i) })),
    });
    const usageMetadata = (upTo: number) => {
      const candidatesTokenCount = candidates.reduce((sum, g) => sum + Math.min(g.tokens.length, upTo), 0);
      return { promptTokenCount, candidatesTokenCount, totalTokenCount: promptTokenCount + candidatesTokenCount };
    };

    if (!sse) {
      return json(res, 200, {
        candidates: candidates.map((g, index) => ({
          content: { parts: [{ text: g.tokens.join('') }], role: 'model' },
          finishReason: finishOf(g),
          index,
          ...(config.responseLogprobs ? { logprobsResult: logprobsOf(g.tokens, 0) } : {}),
        })),
        ...(behaviour.omitUsage ? {} : { usageMetadata: usageMetadata(Infinity) }),
        modelVersion: model,
        responseId: 'resp-fake',
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const steps = Math.max(...candidates.map((g) => g.tokens.length), 1);
    for (let t = 0; t < steps; t++) {
      if (behaviour.errorAfterChunks !== undefined && t === behaviour.errorAfterChunks) {
        return void res.end(`data: ${JSON.stringify({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } })}\r\n\r\n`);
      }
      const last = t === steps - 1;
      const event = {
        candidates: candidates.flatMap((g, index) =>
          t < Math.max(g.tokens.length, 1)
            ? [{
                content: { parts: [{ text: g.tokens[t] ?? '' }], role: 'model' },
                ...(t === Math.max(g.tokens.length, 1) - 1 ? { finishReason: finishOf(g) } : {}),
                index,
                ...(config.responseLogprobs ? { logprobsResult: logprobsOf(g.tokens.slice(t, t + 1), t) } : {}),
              }]
            : [],
        ),
        ...(behaviour.omitUsage ? {} : { usageMetadata: usageMetadata(last ? Infinity : t + 1) }),
        modelVersion: model,
        responseId: 'resp-fake',
      };
      if (!(await writeEvent(res, `data: ${JSON.stringify(event)}\r\n\r\n`, behaviour))) return;
    }
    res.end();
  });
}

function error(res: ServerResponse, code: number, status: string, message: string): void {
  json(res, code, { error: { code, message, status } });
}
