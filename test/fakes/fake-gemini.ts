import type { ServerResponse } from 'node:http';
import { json, startFakeServer, writeEvent, type FakeHandler, type FakeUpstream } from './fake-server.js';
import { geminiModelList, type ListedModel } from './model-lists.js';
import { fakeGeminiEmbed } from './fake-gemini-embed.js';
import { fakeLogprob } from './generation.js';
import { answer, isPlainObject, planToolCalls, promptTokens, signatureFor, type Answer, type OfferedTool, type ToolMode } from './chat-model.js';

const CONFIG_FIELDS = new Set([
  'maxOutputTokens', 'stopSequences', 'candidateCount', 'temperature', 'topP', 'topK', 'seed',
  'presencePenalty', 'frequencyPenalty', 'responseLogprobs', 'logprobs',
  'responseMimeType', 'responseSchema', 'responseJsonSchema', 'thinkingConfig', 'responseModalities', 'mediaResolution',
]);
const REQUEST_FIELDS = new Set(['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'safetySettings', 'cachedContent']);
const PART_FIELDS = new Set([
  'text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult', 'toolCall', 'toolResponse',
  'thought', 'thoughtSignature', 'videoMetadata', 'partMetadata', 'mediaResolution',
]);
/** The members of Part's `data` oneof. */
const DATA_FIELDS = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult', 'toolCall', 'toolResponse'];
const TOOL_FIELDS = new Set(['functionDeclarations', 'googleSearch', 'googleSearchRetrieval', 'codeExecution', 'urlContext', 'fileSearch', 'googleMaps', 'computerUse']);
const DECLARATION_FIELDS = new Set(['name', 'description', 'behavior', 'parameters', 'parametersJsonSchema', 'response', 'responseJsonSchema']);
/** The OpenAPI subset `Schema` accepts (`parameters`, `responseSchema`); anything else is an unknown field. */
const SCHEMA_FIELDS = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required', 'minProperties',
  'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering', 'default', 'items', 'minimum', 'maximum',
]);
const SCHEMA_TYPES = new Set(['TYPE_UNSPECIFIED', 'STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL']);
const MIME_TYPES = new Set(['text/plain', 'application/json', 'application/xml', 'application/yaml', 'text/x.enum']);
const HARM_CATEGORIES = new Set([
  'HARM_CATEGORY_UNSPECIFIED', 'HARM_CATEGORY_DEROGATORY', 'HARM_CATEGORY_TOXICITY', 'HARM_CATEGORY_VIOLENCE', 'HARM_CATEGORY_SEXUAL',
  'HARM_CATEGORY_MEDICAL', 'HARM_CATEGORY_DANGEROUS', 'HARM_CATEGORY_HARASSMENT', 'HARM_CATEGORY_HATE_SPEECH', 'HARM_CATEGORY_SEXUALLY_EXPLICIT',
  'HARM_CATEGORY_DANGEROUS_CONTENT', 'HARM_CATEGORY_CIVIC_INTEGRITY',
]);
const HARM_THRESHOLDS = new Set(['HARM_BLOCK_THRESHOLD_UNSPECIFIED', 'BLOCK_LOW_AND_ABOVE', 'BLOCK_MEDIUM_AND_ABOVE', 'BLOCK_ONLY_HIGH', 'BLOCK_NONE', 'OFF']);
/** The one context cache this fake holds, and the prompt tokens it adds (all of them cached). */
export const KNOWN_CACHE = 'cachedContents/sluice-test-cache';
const CACHE_TOKENS = 10;

/**
 * A stand-in for Gemini's generateContent / streamGenerateContent as documented: `x-goog-api-key`
 * (a wrong one is 400 API_KEY_INVALID, as Google answers), `generationConfig` validated (≤ 5 stop
 * sequences, candidateCount 1..8, temperature 0..2, unknown names refused), errors as
 * `{"error":{code,message,status}}`, SSE of partial responses with no [DONE]. A prompt containing
 * "forbidden" is blocked (`promptFeedback.blockReason`); one containing "unsafe" gets a SAFETY stop.
 *
 * Requests are checked as the API checks them, with its error texts where known: unknown field
 * names anywhere (request, parts, tools, function declarations, schemas) are refused as
 * `Invalid JSON payload received. Unknown name "…" at '…': Cannot find field.`; roles only "user"
 * and "model"; parts non-empty, each with exactly one data field; inlineData with a mimeType and
 * base64 data (an application/pdf one a PDF's bytes); functionCall.name / functionResponse.name
 * non-empty, args / response objects; a function call turn must come right after a user turn or
 * a function response turn, a function response turn right after a function call turn, with as many responses as there were calls,
 * each naming a function called in that turn. Function declarations: name `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`;
 * `parameters` (and `responseSchema`) use the OpenAPI subset — `$schema`, `additionalProperties`,
 * `$ref`, `const`, `oneOf`… are unknown names, types must be Gemini's (any case), OBJECT needs
 * non-empty `properties`, `required` names must be defined; `parametersJsonSchema` (and
 * `responseJsonSchema`) take JSON Schema; not both. toolConfig.functionCallingConfig mode AUTO /
 * ANY / NONE / VALIDATED, allowedFunctionNames (declared names) only with ANY or VALIDATED.
 * responseMimeType one of text/plain, application/json, application/xml, application/yaml,
 * text/x.enum; a response schema needs application/json or text/x.enum. thinkingConfig
 * {includeThoughts, thinkingBudget, thinkingLevel}. safetySettings: each {category (a HarmCategory),
 * threshold (a HarmBlockThreshold), method?}, a category at most once. `cachedContent`: the one cache
 * this fake holds is KNOWN_CACHE (10 tokens of context, all of them cached); any other name is
 * 403 "CachedContent not found (or permission denied)", as Google answers.
 *
 * countTokens (`POST /v1beta/models/{m}:countTokens`): {contents} or {generateContentRequest:
 * {model: "models/{m}", contents, …}} (not both), checked as generateContent checks them; the
 * answer is {totalTokens, promptTokensDetails: [{modality: "TEXT", tokenCount}]} with the same
 * prompt count generateContent would report.
 *
 * The model is chat-model.ts's, spelled the Gemini way:
 * - tool calls: `functionCall` parts {name, args} without an id, finishReason STOP. Gemini sends
 *   each call whole, so a streamed call arrives whole in its own event (not in fragments; each
 *   still counts 3 tokens). Mode ANY = required (among allowedFunctionNames), ANY with exactly one
 *   allowed name = named; there is no switch for parallel calls.
 * - tool results: a last user turn holding functionResponse parts; the answer quotes each
 *   response: "Result: <text>" where text is the value when the response object has a single
 *   string property (e.g. {"result": "Sunny"}), else the object's JSON.
 * - JSON: responseMimeType application/json with responseSchema / responseJsonSchema → the
 *   schema's minimal instance; without a schema {"ok":true}.
 * - images: inlineData / fileData parts with an image/* mimeType in the last user turn.
 * - reasoning: thinkingConfig with includeThoughts true, or a thinkingBudget other than 0, or a
 *   thinkingLevel → the model thinks: 3 thought tokens in usageMetadata.thoughtsTokenCount (not in
 *   candidatesTokenCount; they count against maxOutputTokens); with includeThoughts the
 *   candidate starts with a part {text: "Let me think.", thought: true} (streamed as 3 thought
 *   parts). The first functionCall part, or the (last) text part, carries a `thoughtSignature`.
 * - caching: a prompt of more than 20 tokens reports cachedContentTokenCount 16 (implicit caching;
 *   promptTokenCount includes it). totalTokenCount = prompt + candidates + thoughts.
 * - finishReason: STOP (also for function calls), MAX_TOKENS, SAFETY. candidateCount up to 8, each
 *   candidate the same answer.
 */
export function startFakeGemini(options: FakeGeminiOptions): Promise<FakeUpstream> {
  return startFakeServer('/v1beta', geminiHandler(options));
}

export interface FakeGeminiOptions {
  apiKey: string;
  models?: string[];
  /** What `GET /v1beta/models` lists (default: `models`), at most `listPageMax` a page (default 1000); the test may change the array. */
  listed?: ListedModel[];
  listPageMax?: number;
}

/** The Gemini API's requests answered, for this fake and for another home of the same models (fake-vertex.ts). */
export function geminiHandler(options: FakeGeminiOptions): FakeHandler {
  const models = new Set(options.models ?? ['gemini-test']);
  const listed = options.listed ?? [...models].map((id) => ({ id }));
  return async (request, res, behaviour) => {
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
    // Google serves the API under both versions; @google/genai 3 calls /v1 by default, the other clients /v1beta.
    if (request.method === 'GET' && /^\/v1(beta)?\/models(\?|$)/.test(request.path)) {
      return geminiModelList(res, request.path, listed, options.listPageMax ?? 1000, (code, status, message) => error(res, code, status, message));
    }
    if (fakeGeminiEmbed(request, res, models)) return;
    const match = /^\/(v1beta|v1)\/models\/([^:/?]+):(generateContent|streamGenerateContent|countTokens)(\?alt=sse)?$/.exec(request.path);
    if (request.method !== 'POST' || !match) return error(res, 404, 'NOT_FOUND', `Not found: ${request.path}`);
    const [, version, model, method, sse] = match;
    if (!models.has(model!)) return error(res, 404, 'NOT_FOUND', `models/${model} is not found for API version ${version}, or is not supported for ${method}.`);
    if (method === 'countTokens') return countTokens(res, model!, body);
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
    let read: GeminiRequest;
    try {
      read = readGenerateRequest(body ?? {});
    } catch (e) {
      if (e instanceof InvalidArgument) return error(res, e.code, e.status, e.message);
      throw e;
    }
    const promptTokenCount = read.promptTokens;

    if (read.prompt.includes('forbidden')) {
      const blocked = { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount, totalTokenCount: promptTokenCount }, modelVersion: model };
      if (!sse) return json(res, 200, blocked);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end(`data: ${JSON.stringify(blocked)}\r\n\r\n`);
    }
    const count: number = config.candidateCount ?? 1;
    const unsafe = read.prompt.includes('unsafe');
    const calls = unsafe || read.toolResults !== null ? [] : planToolCalls(read.prompt, read.tools, read.mode, true);
    const answers: Answer[] = Array.from({ length: count }, () =>
      unsafe
        ? { reasoning: [], calls: [], text: [' Hmm'], finish: 'stop', stop: null, outputTokens: 1 }
        : answer({ ...read, maxTokens: config.maxOutputTokens ?? 8192, stops: config.stopSequences ?? [], calls }),
    );
    const finishOf = (a: Answer) => (unsafe ? 'SAFETY' : a.finish === 'length' ? 'MAX_TOKENS' : 'STOP');
    const logprobsOf = (tokens: string[], start: number) => ({
      topCandidates: tokens.map((token, i) => ({ candidates: [{ token, tokenId: 7, logProbability: fakeLogprob(start + i) }, { token: ' alt', tokenId: 8, logProbability: fakeLogprob(start + i) - 1 }].slice(0, config.logprobs ?? 0) })),
      chosenCandidates: tokens.map((token, i) => ({ token, tokenId: 7, logProbability: fakeLogprob(start + i) })),
    });
    const cached = read.cacheTokens > 0 ? read.cacheTokens : promptTokenCount > 20 ? 16 : 0;
    const usageMetadata = (candidatesTokenCount: number, thoughtsTokenCount: number) => ({
      promptTokenCount,
      candidatesTokenCount,
      totalTokenCount: promptTokenCount + candidatesTokenCount + thoughtsTokenCount,
      ...(cached > 0 ? { cachedContentTokenCount: cached } : {}),
      ...(read.reasoning ? { thoughtsTokenCount } : {}),
    });
    const signature = (a: Answer) => signatureFor('thought', a.reasoning.join(''));

    /** A candidate's parts as the events of a stream, each with the output it adds. */
    const stepsOf = (a: Answer): Step[] => {
      const steps: Step[] = [];
      if (read.showThoughts) for (const token of a.reasoning) steps.push({ parts: [{ text: token, thought: true }], tokens: 0, thoughts: 1, logprobs: [] });
      // Thoughts not shown have no part: their count rides on the next event (mergeHiddenThoughts).
      else if (a.reasoning.length > 0) steps.push({ parts: [], tokens: 0, thoughts: a.reasoning.length, logprobs: [] });
      a.calls.forEach((c, j) => steps.push({ parts: [{ functionCall: { name: c.name, args: c.args }, ...(j === 0 && read.reasoning ? { thoughtSignature: signature(a) } : {}) }], tokens: c.fragments.length, thoughts: 0, logprobs: [] }));
      if (a.calls.length === 0) {
        const texts = a.text.length > 0 ? a.text : [''];
        texts.forEach((token, t) => steps.push({ parts: [{ text: token, ...(t === texts.length - 1 && read.reasoning ? { thoughtSignature: signature(a) } : {}) }], tokens: a.text.length > 0 ? 1 : 0, thoughts: 0, logprobs: a.text.length > 0 ? [token] : [] }));
      }
      return steps;
    };

    if (!sse) {
      return json(res, 200, {
        candidates: answers.map((a, index) => ({
          content: {
            parts: [
              ...(read.showThoughts && a.reasoning.length > 0 ? [{ text: a.reasoning.join(''), thought: true }] : []),
              ...(a.calls.length > 0
                ? a.calls.map((c, j) => ({ functionCall: { name: c.name, args: c.args }, ...(j === 0 && read.reasoning ? { thoughtSignature: signature(a) } : {}) }))
                : [{ text: a.text.join(''), ...(read.reasoning ? { thoughtSignature: signature(a) } : {}) }]),
            ],
            role: 'model',
          },
          finishReason: finishOf(a),
          index,
          ...(config.responseLogprobs ? { logprobsResult: logprobsOf(a.text, 0) } : {}),
        })),
        ...(behaviour.omitUsage ? {} : { usageMetadata: usageMetadata(answers.reduce((sum, a) => sum + a.outputTokens - a.reasoning.length, 0), answers.reduce((sum, a) => sum + a.reasoning.length, 0)) }),
        modelVersion: model,
        responseId: 'resp-fake',
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const perCandidate = answers.map((a) => mergeHiddenThoughts(stepsOf(a)));
    const steps = Math.max(...perCandidate.map((s) => s.length), 1);
    const emitted = perCandidate.map(() => ({ tokens: 0, thoughts: 0, logprobs: 0 }));
    for (let t = 0; t < steps; t++) {
      if (behaviour.errorAfterChunks !== undefined && t === behaviour.errorAfterChunks) {
        const message = behaviour.errorMessage?.(request) ?? 'The model is overloaded.';
        return void res.end(`data: ${JSON.stringify({ error: { code: 503, message, status: 'UNAVAILABLE' } })}\r\n\r\n`);
      }
      const candidates = perCandidate.flatMap((candidateSteps, index) => {
        const step = candidateSteps[t];
        if (step === undefined) return [];
        const start = emitted[index]!.logprobs;
        emitted[index]!.tokens += step.tokens;
        emitted[index]!.thoughts += step.thoughts;
        emitted[index]!.logprobs += step.logprobs.length;
        return [{
          content: { parts: step.parts, role: 'model' },
          ...(t === candidateSteps.length - 1 ? { finishReason: finishOf(answers[index]!) } : {}),
          index,
          ...(config.responseLogprobs ? { logprobsResult: logprobsOf(step.logprobs, start) } : {}),
        }];
      });
      const event = {
        candidates,
        ...(behaviour.omitUsage ? {} : { usageMetadata: usageMetadata(emitted.reduce((sum, e) => sum + e.tokens, 0), emitted.reduce((sum, e) => sum + e.thoughts, 0)) }),
        modelVersion: model,
        responseId: 'resp-fake',
      };
      if (!(await writeEvent(res, `data: ${JSON.stringify(event)}\r\n\r\n`, behaviour))) return;
    }
    res.end();
  };
}

type Step = { parts: Record<string, unknown>[]; tokens: number; thoughts: number; logprobs: string[] };

/** Thoughts that are not shown have no part of their own: their count rides on the next event. */
function mergeHiddenThoughts(steps: Step[]): Step[] {
  const out: Step[] = [];
  let carried = 0;
  for (const step of steps) {
    if (step.parts.length === 0) {
      carried += step.thoughts;
      continue;
    }
    out.push({ ...step, thoughts: step.thoughts + carried });
    carried = 0;
  }
  return out;
}

class InvalidArgument {
  constructor(
    readonly message: string,
    readonly code = 400,
    readonly status = 'INVALID_ARGUMENT',
  ) {}
}

function fail(message: string): never {
  throw new InvalidArgument(message);
}

/** A failed check of a field's value, worded as Google's API words them. */
function violation(field: string, description: string): never {
  throw new InvalidArgument(`* GenerateContentRequest.${field}: ${description}\n`);
}

function unknownName(name: string, at: string | null): never {
  throw new InvalidArgument(`Invalid JSON payload received. Unknown name "${name}"${at === null ? '' : ` at '${at}'`}: Cannot find field.`);
}

function checkFields(value: Record<string, unknown>, known: Set<string>, at: string | null): void {
  for (const name of Object.keys(value)) if (!known.has(name)) unknownName(name, at);
}

/** Proto JSON bytes: standard or URL-safe base64, padding optional. */
function decodeBytes(data: unknown): Buffer | null {
  if (typeof data !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(data) || data.replace(/=+$/, '').length % 4 === 1) return null;
  return Buffer.from(data.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

/** Checks a `Schema` (the OpenAPI subset) at a proto field path. */
function checkSchema(schema: unknown, path: string): void {
  if (!isPlainObject(schema)) fail(`Invalid value at '${path}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Schema), ${JSON.stringify(schema)}`);
  checkFields(schema, SCHEMA_FIELDS, path);
  if (schema.type !== undefined && (typeof schema.type !== 'string' || !SCHEMA_TYPES.has(schema.type.toUpperCase()))) {
    fail(`Invalid value at '${path}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), ${JSON.stringify(schema.type)}`);
  }
  const type = typeof schema.type === 'string' ? schema.type.toUpperCase() : undefined;
  const properties = schema.properties;
  if (properties !== undefined && !isPlainObject(properties)) fail(`Invalid value at '${path}.properties', ${JSON.stringify(properties)}`);
  if (type === 'OBJECT' && (properties === undefined || Object.keys(properties).length === 0)) violation(`${path}.properties`, 'should be non-empty for OBJECT type');
  Object.values(properties ?? {}).forEach((sub, i) => checkSchema(sub, `${path}.properties[${i}].value`));
  if (schema.required !== undefined) {
    if (!Array.isArray(schema.required)) fail(`Invalid value at '${path}.required', ${JSON.stringify(schema.required)}`);
    schema.required.forEach((name: unknown, i: number) => {
      if (typeof name !== 'string' || !(properties && name in properties)) violation(`${path}.required[${i}]`, 'property is not defined');
    });
  }
  if (schema.items !== undefined) checkSchema(schema.items, `${path}.items`);
  if (schema.anyOf !== undefined) {
    if (!Array.isArray(schema.anyOf)) fail(`Invalid value at '${path}.any_of', ${JSON.stringify(schema.anyOf)}`);
    schema.anyOf.forEach((sub: unknown, i: number) => checkSchema(sub, `${path}.any_of[${i}]`));
  }
  if (schema.enum !== undefined && (!Array.isArray(schema.enum) || schema.enum.some((v: unknown) => typeof v !== 'string'))) {
    fail(`Invalid value at '${path}.enum', ${JSON.stringify(schema.enum)}`);
  }
}

interface GeminiRequest {
  readonly prompt: string;
  readonly images: number;
  readonly toolResults: string[] | null;
  readonly promptTokens: number;
  /** Of promptTokens, those read from a context cache. */
  readonly cacheTokens: number;
  readonly tools: OfferedTool[];
  readonly mode: ToolMode;
  readonly json: { schema: unknown } | 'object' | null;
  readonly reasoning: boolean;
  readonly showThoughts: boolean;
}

/** The text a function response is quoted as: a lone string property's value, else the JSON. */
function responseText(response: Record<string, unknown>): string {
  const values = Object.values(response);
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : JSON.stringify(response);
}

function readGenerateRequest(body: any): GeminiRequest {
  if (!isPlainObject(body)) fail('Invalid JSON payload received.');
  checkFields(body, REQUEST_FIELDS, null);
  if (body.cachedContent !== undefined && body.cachedContent !== KNOWN_CACHE) throw new InvalidArgument('CachedContent not found (or permission denied)', 403, 'PERMISSION_DENIED');
  const cacheTokens = body.cachedContent === KNOWN_CACHE ? CACHE_TOKENS : 0;
  const texts: string[] = [];
  let images = 0;

  // Safety settings.
  if (body.safetySettings !== undefined) {
    if (!Array.isArray(body.safetySettings)) fail(`Invalid value at 'safety_settings', ${JSON.stringify(body.safetySettings)}`);
    const seen = new Set<string>();
    body.safetySettings.forEach((setting: any, i: number) => {
      const at = `safety_settings[${i}]`;
      if (!isPlainObject(setting)) fail(`Invalid value at '${at}' (type.googleapis.com/google.ai.generativelanguage.v1beta.SafetySetting), ${JSON.stringify(setting)}`);
      checkFields(setting, new Set(['category', 'threshold', 'method']), at);
      if (!HARM_CATEGORIES.has(setting.category)) fail(`Invalid value at '${at}.category' (type.googleapis.com/google.ai.generativelanguage.v1beta.HarmCategory), ${JSON.stringify(setting.category)}`);
      if (!HARM_THRESHOLDS.has(setting.threshold)) fail(`Invalid value at '${at}.threshold' (type.googleapis.com/google.ai.generativelanguage.v1beta.SafetySetting.HarmBlockThreshold), ${JSON.stringify(setting.threshold)}`);
      if (seen.has(setting.category)) violation(`${at}.category`, `Duplicate category ${setting.category}`);
      seen.add(setting.category);
    });
  }

  // System instruction.
  if (body.systemInstruction !== undefined) {
    const system = body.systemInstruction;
    if (!isPlainObject(system) || !Array.isArray(system.parts)) fail(`Invalid value at 'system_instruction' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content), ${JSON.stringify(system)}`);
    system.parts.forEach((part: any, j: number) => {
      if (!isPlainObject(part)) fail(`Invalid value at 'system_instruction.parts[${j}]'`);
      checkFields(part, PART_FIELDS, `system_instruction.parts[${j}]`);
      if (typeof part.text === 'string') texts.push(part.text);
    });
  }

  // Tools.
  const tools: OfferedTool[] = [];
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) fail(`Invalid value at 'tools', ${JSON.stringify(body.tools)}`);
    body.tools.forEach((tool: any, k: number) => {
      if (!isPlainObject(tool)) fail(`Invalid value at 'tools[${k}]'`);
      checkFields(tool, TOOL_FIELDS, `tools[${k}]`);
      (tool.functionDeclarations ?? []).forEach((declaration: any, d: number) => {
        const at = `tools[${k}].function_declarations[${d}]`;
        if (!isPlainObject(declaration)) fail(`Invalid value at '${at}'`);
        checkFields(declaration, DECLARATION_FIELDS, at);
        if (typeof declaration.name !== 'string' || !/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/.test(declaration.name)) {
          violation(`${at}.name`, 'Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.');
        }
        if (declaration.parameters !== undefined && declaration.parametersJsonSchema !== undefined) {
          violation(`${at}.parameters_json_schema`, 'parameters_json_schema and parameters cannot both be set');
        }
        if (declaration.parameters !== undefined) checkSchema(declaration.parameters, `${at}.parameters`);
        if (declaration.parametersJsonSchema !== undefined && !isPlainObject(declaration.parametersJsonSchema)) {
          fail(`Invalid value at '${at}.parameters_json_schema' (type.googleapis.com/google.protobuf.Value), ${JSON.stringify(declaration.parametersJsonSchema)}`);
        }
        if (declaration.response !== undefined) checkSchema(declaration.response, `${at}.response`);
        if (tools.some((t) => t.name === declaration.name)) violation(`${at}.name`, `Duplicate function declaration name: ${declaration.name}`);
        tools.push({ name: declaration.name, schema: declaration.parameters ?? declaration.parametersJsonSchema ?? {} });
      });
    });
  }

  // Tool config.
  let mode: ToolMode = tools.length > 0 ? { type: 'auto' } : { type: 'none' };
  const calling = body.toolConfig?.functionCallingConfig;
  if (body.toolConfig !== undefined) {
    if (!isPlainObject(body.toolConfig)) fail(`Invalid value at 'tool_config', ${JSON.stringify(body.toolConfig)}`);
    checkFields(body.toolConfig, new Set(['functionCallingConfig', 'retrievalConfig', 'includeServerSideToolInvocations']), 'tool_config');
  }
  if (calling !== undefined) {
    if (!isPlainObject(calling)) fail(`Invalid value at 'tool_config.function_calling_config', ${JSON.stringify(calling)}`);
    checkFields(calling, new Set(['mode', 'allowedFunctionNames', 'streamFunctionCallArguments']), 'tool_config.function_calling_config');
    const m = calling.mode ?? 'MODE_UNSPECIFIED';
    if (!['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED'].includes(m)) {
      fail(`Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), ${JSON.stringify(m)}`);
    }
    const allowed = calling.allowedFunctionNames;
    if (allowed !== undefined) {
      if (m !== 'ANY' && m !== 'VALIDATED') {
        violation('tool_config.function_calling_config.allowed_function_names', 'allowed_function_names may only be set when function_calling_config.mode is ANY or VALIDATED.');
      }
      if (!Array.isArray(allowed)) fail(`Invalid value at 'tool_config.function_calling_config.allowed_function_names', ${JSON.stringify(allowed)}`);
      allowed.forEach((name: unknown, i: number) => {
        if (!tools.some((t) => t.name === name)) violation(`tool_config.function_calling_config.allowed_function_names[${i}]`, `function ${String(name)} is not declared in tools`);
      });
    }
    if (m === 'NONE') mode = { type: 'none' };
    else if (m === 'ANY') mode = Array.isArray(allowed) && allowed.length === 1 ? { type: 'named', name: allowed[0] } : { type: 'required', ...(Array.isArray(allowed) ? { among: allowed } : {}) };
  }

  // Generation config: structured output and thinking.
  const config = isPlainObject(body.generationConfig) ? body.generationConfig : {};
  let jsonOutput: { schema: unknown } | 'object' | null = null;
  const mime = config.responseMimeType;
  if (mime !== undefined && !MIME_TYPES.has(mime)) {
    violation('generation_config.response_mime_type', 'allowed mimetypes are `text/plain`, `application/json`, `application/xml`, `application/yaml` and `text/x.enum`.');
  }
  if (config.responseSchema !== undefined && config.responseJsonSchema !== undefined) {
    violation('generation_config.response_json_schema', 'response_json_schema and response_schema cannot both be set');
  }
  if (config.responseSchema !== undefined) checkSchema(config.responseSchema, 'generation_config.response_schema');
  if (config.responseJsonSchema !== undefined && !isPlainObject(config.responseJsonSchema)) {
    fail(`Invalid value at 'generation_config.response_json_schema' (type.googleapis.com/google.protobuf.Value), ${JSON.stringify(config.responseJsonSchema)}`);
  }
  const schema = config.responseSchema ?? config.responseJsonSchema;
  if (schema !== undefined && mime !== 'application/json' && mime !== 'text/x.enum') {
    violation('generation_config.response_mime_type', 'a response schema requires response_mime_type application/json or text/x.enum');
  }
  if (mime === 'application/json') jsonOutput = schema === undefined ? 'object' : { schema };
  let reasoning = false;
  let showThoughts = false;
  if (config.thinkingConfig !== undefined) {
    const thinking = config.thinkingConfig;
    if (!isPlainObject(thinking)) fail(`Invalid value at 'generation_config.thinking_config', ${JSON.stringify(thinking)}`);
    checkFields(thinking, new Set(['includeThoughts', 'thinkingBudget', 'thinkingLevel']), 'generation_config.thinking_config');
    if (thinking.thinkingBudget !== undefined && (!Number.isInteger(thinking.thinkingBudget) || thinking.thinkingBudget < -1)) {
      fail(`Invalid value at 'generation_config.thinking_config.thinking_budget' (TYPE_INT32), ${JSON.stringify(thinking.thinkingBudget)}`);
    }
    if (thinking.thinkingLevel !== undefined && !['THINKING_LEVEL_UNSPECIFIED', 'MINIMAL', 'LOW', 'MEDIUM', 'HIGH'].includes(String(thinking.thinkingLevel).toUpperCase())) {
      fail(`Invalid value at 'generation_config.thinking_config.thinking_level' (type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig.ThinkingLevel), ${JSON.stringify(thinking.thinkingLevel)}`);
    }
    if (thinking.thinkingBudget !== undefined && thinking.thinkingLevel !== undefined) violation('generation_config.thinking_config', 'thinking_budget and thinking_level cannot both be set');
    reasoning = thinking.thinkingBudget !== 0 && (thinking.includeThoughts === true || thinking.thinkingBudget !== undefined || thinking.thinkingLevel !== undefined);
    showThoughts = reasoning && thinking.includeThoughts === true;
  }

  // Contents.
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) violation('contents', 'contents is not specified');
  contents.forEach((content: any, i: number) => {
    const at = `contents[${i}]`;
    if (!isPlainObject(content)) fail(`Invalid value at '${at}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content), ${JSON.stringify(content)}`);
    checkFields(content, new Set(['role', 'parts']), at);
    // `function` is the older SDK's role for the turn of function responses, which the API accepts.
    if (content.role !== undefined && content.role !== 'user' && content.role !== 'model' && content.role !== 'function') fail('Please use a valid role: user, model.');
    const role = content.role ?? 'user';
    if (!Array.isArray(content.parts) || content.parts.length === 0) violation(`${at}.parts`, 'contents.parts must not be empty.');
    content.parts.forEach((part: any, j: number) => {
      const where = `${at}.parts[${j}]`;
      if (!isPlainObject(part)) fail(`Invalid value at '${where}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Part), ${JSON.stringify(part)}`);
      checkFields(part, PART_FIELDS, where);
      const set = DATA_FIELDS.filter((field) => part[field] !== undefined);
      if (set.length === 0) violation(`${where}.data`, "required oneof field 'data' must have one initialized field");
      if (set.length > 1) fail(`Invalid JSON payload received. Oneof field 'data' is already set. Cannot set '${set[1]}'`);
      if (part.thoughtSignature !== undefined && decodeBytes(part.thoughtSignature) === null) {
        fail(`Invalid value at '${where}.thought_signature' (TYPE_BYTES), Base64 decoding failed for ${JSON.stringify(part.thoughtSignature)}`);
      }
      if (part.text !== undefined) {
        if (typeof part.text !== 'string') fail(`Invalid value at '${where}.text' (TYPE_STRING), ${JSON.stringify(part.text)}`);
        if (part.thought !== true) texts.push(part.text);
      }
      if (part.inlineData !== undefined) {
        const blob = part.inlineData;
        if (!isPlainObject(blob)) fail(`Invalid value at '${where}.inline_data' (type.googleapis.com/google.ai.generativelanguage.v1beta.Blob), ${JSON.stringify(blob)}`);
        checkFields(blob, new Set(['mimeType', 'data', 'displayName']), `${where}.inline_data`);
        if (typeof blob.mimeType !== 'string' || blob.mimeType === '') violation(`${where}.inline_data.mime_type`, 'mime_type is not specified');
        if (decodeBytes(blob.data) === null || blob.data === '') fail(`Invalid value at '${where}.inline_data.data' (TYPE_BYTES), Base64 decoding failed for ${JSON.stringify(String(blob.data).slice(0, 40))}`);
        if (blob.mimeType.startsWith('image/')) images++;
        else if (blob.mimeType === 'application/pdf' && !decodeBytes(blob.data)!.subarray(0, 5).equals(Buffer.from('%PDF-'))) violation(`${where}.inline_data.data`, 'The document has no pages.');
      }
      if (part.fileData !== undefined) {
        const file = part.fileData;
        if (!isPlainObject(file)) fail(`Invalid value at '${where}.file_data' (type.googleapis.com/google.ai.generativelanguage.v1beta.FileData), ${JSON.stringify(file)}`);
        checkFields(file, new Set(['mimeType', 'fileUri', 'displayName']), `${where}.file_data`);
        if (typeof file.fileUri !== 'string' || file.fileUri === '') violation(`${where}.file_data.file_uri`, 'file_uri is not specified');
        if (typeof file.mimeType === 'string' && file.mimeType.startsWith('image/')) images++;
      }
      if (part.functionCall !== undefined) {
        const call = part.functionCall;
        if (!isPlainObject(call)) fail(`Invalid value at '${where}.function_call' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCall), ${JSON.stringify(call)}`);
        checkFields(call, new Set(['id', 'name', 'args']), `${where}.function_call`);
        if (typeof call.name !== 'string' || call.name === '') violation(`${where}.function_call.name`, 'Name cannot be empty.');
        if (call.args !== undefined && !isPlainObject(call.args)) fail(`Invalid value at '${where}.function_call.args' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(call.args)}`);
        if (role !== 'model') fail('Please ensure that function call turns come from the model: a functionCall part must be in a content with role "model".');
        texts.push(JSON.stringify(call.args ?? {}));
      }
      if (part.functionResponse !== undefined) {
        const response = part.functionResponse;
        if (!isPlainObject(response)) fail(`Invalid value at '${where}.function_response' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionResponse), ${JSON.stringify(response)}`);
        checkFields(response, new Set(['id', 'name', 'response', 'parts', 'willContinue', 'scheduling']), `${where}.function_response`);
        if (typeof response.name !== 'string' || response.name === '') violation(`${where}.function_response.name`, 'Name cannot be empty.');
        if (!isPlainObject(response.response)) fail(`Invalid value at '${where}.function_response.response' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(response.response ?? null)}`);
        if (role !== 'user' && role !== 'function') fail('Please ensure that function response turns come from the user: a functionResponse part must be in a content with role "user".');
        texts.push(responseText(response.response));
      }
    });
  });

  // Function call and response turns pair up.
  const callsOf = (content: any) => (content?.role === 'model' ? content.parts.filter((p: any) => p.functionCall !== undefined).map((p: any) => p.functionCall.name as string) : []);
  contents.forEach((content: any, i: number) => {
    const calls = callsOf(content);
    const responses = (content.role ?? 'user') !== 'model' ? content.parts.filter((p: any) => p.functionResponse !== undefined) : [];
    if (calls.length > 0 && (i === 0 || (contents[i - 1].role ?? 'user') === 'model')) {
      fail('Please ensure that function call turn comes immediately after a user turn or after a function response turn.');
    }
    if (responses.length > 0) {
      const asked = callsOf(contents[i - 1]);
      if (asked.length === 0) fail('Please ensure that function response turn comes immediately after a function call turn.');
      if (asked.length !== responses.length) fail('Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.');
      responses.forEach((p: any) => {
        if (!asked.includes(p.functionResponse.name)) {
          fail(`Please ensure that each function response part names a function called in the function call turn: ${p.functionResponse.name} was not called.`);
        }
      });
    }
  });

  // What the model answers.
  const last = contents.at(-1);
  // A `function` turn is the user's side too (the older SDK's role for function responses).
  const userSide = (c: any) => (c.role ?? 'user') !== 'model';
  const lastUser = [...contents].reverse().find(userSide);
  const userParts: any[] = lastUser?.parts ?? [];
  const prompt = userParts.filter((p) => typeof p.text === 'string' && p.thought !== true).map((p) => p.text).join(' ');
  const lastImages = userParts.filter((p) => (p.inlineData?.mimeType ?? p.fileData?.mimeType ?? '').startsWith('image/')).length;
  const responses = userSide(last) ? last.parts.filter((p: any) => p.functionResponse !== undefined) : [];
  return {
    prompt,
    images: lastImages,
    toolResults: responses.length > 0 ? responses.map((p: any) => responseText(p.functionResponse.response)) : null,
    promptTokens: promptTokens(texts, images) + cacheTokens,
    cacheTokens,
    tools,
    mode,
    json: jsonOutput,
    reasoning,
    showThoughts,
  };
}

/** countTokens: the prompt count generateContent would report, for {contents} or a whole generateContentRequest. */
function countTokens(res: ServerResponse, model: string, body: any): void {
  try {
    if (!isPlainObject(body)) fail('Invalid JSON payload received.');
    checkFields(body, new Set(['contents', 'generateContentRequest']), null);
    if ((body.contents === undefined) === (body.generateContentRequest === undefined)) fail('Exactly one of contents or generate_content_request must be set.');
    let request = body.generateContentRequest;
    if (request !== undefined) {
      if (!isPlainObject(request)) fail(`Invalid value at 'generate_content_request', ${JSON.stringify(request)}`);
      if (request.model !== `models/${model}`) violation('generate_content_request.model', `must name the model in the path (models/${model}), got ${JSON.stringify(request.model)}`);
      const { model: _named, ...rest } = request;
      request = rest;
    }
    const tokens = readGenerateRequest(request ?? { contents: body.contents }).promptTokens;
    json(res, 200, { totalTokens: tokens, promptTokensDetails: [{ modality: 'TEXT', tokenCount: tokens }] });
  } catch (e) {
    if (e instanceof InvalidArgument) return error(res, e.code, e.status, e.message);
    throw e;
  }
}

function error(res: ServerResponse, code: number, status: string, message: string): void {
  json(res, code, { error: { code, message, status } });
}
