import { z } from 'zod';
import { GatewayError } from '../../../core/errors.js';
import type { WireRequest } from '../../../generation/operation.js';
import { shapeOf, withJsonNames } from './json-names.js';

/**
 * Google's GenerateContentRequest and CountTokensRequest, checked as Google checks them: a name the
 * API does not have is refused anywhere ("Invalid JSON payload received. Unknown name …"), values
 * within the documented bounds. Proto field names and single objects for lists, which Google
 * reads too, are first brought to the JSON names and lists (json-names.ts). Fields Sluice does not
 * translate are still accepted here, for a Gemini upstream, which gets the body relayed;
 * translation refuses them by name (see translate.ts).
 */
const record = z.record(z.string(), z.unknown());
/** A Google `Schema` (checked when translated, see openapi-schema.ts): its own field names are the API's, its property names the caller's. */
const openApiSchema = z.record(z.string(), z.unknown());

const blob = z.strictObject({ mimeType: z.string().min(1), data: z.string().min(1), displayName: z.string().optional() });
const fileData = z.strictObject({ mimeType: z.string().optional(), fileUri: z.string().min(1), displayName: z.string().optional() });
const functionCall = z.strictObject({ id: z.string().optional(), name: z.string().min(1), args: record.optional() });
const functionResponse = z.strictObject({
  id: z.string().optional(),
  name: z.string().min(1),
  response: record,
  parts: z.array(z.unknown()).optional(),
  willContinue: z.boolean().optional(),
  scheduling: z.string().optional(),
});

/** The members of Part's `data` oneof: exactly one is set. */
const DATA_FIELDS = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult', 'toolCall', 'toolResponse'] as const;

const part = z.strictObject({
  text: z.string().optional(),
  inlineData: blob.optional(),
  fileData: fileData.optional(),
  functionCall: functionCall.optional(),
  functionResponse: functionResponse.optional(),
  executableCode: record.optional(),
  codeExecutionResult: record.optional(),
  toolCall: record.optional(),
  toolResponse: record.optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  videoMetadata: record.optional(),
  partMetadata: record.optional(),
  mediaResolution: z.unknown().optional(),
});

/** `function`: the role @google/generative-ai gives the turn holding function responses, which Google's API takes as a user turn. */
const content = z.strictObject({ role: z.enum(['user', 'model', 'function'], { error: 'Please use a valid role: user, model.' }).optional(), parts: z.array(part).min(1) });
/** Google's API takes a Content; a bare string (as several SDKs accept) is a single text part. */
const systemInstruction = z.preprocess((value) => (typeof value === 'string' ? { parts: [{ text: value }] } : value), z.strictObject({ role: z.string().optional(), parts: z.array(part) }));

const declaration = z.strictObject({
  name: z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/, 'Invalid function name. Must start with a letter or an underscore; letters, digits, underscores, dots, colons or dashes; at most 64.'),
  description: z.string().optional(),
  behavior: z.string().optional(),
  parameters: openApiSchema.optional(),
  parametersJsonSchema: record.optional(),
  response: openApiSchema.optional(),
  responseJsonSchema: record.optional(),
});

const tool = z.strictObject({
  functionDeclarations: z.array(declaration).optional(),
  googleSearch: record.optional(),
  googleSearchRetrieval: record.optional(),
  codeExecution: record.optional(),
  urlContext: record.optional(),
  fileSearch: record.optional(),
  googleMaps: record.optional(),
  computerUse: record.optional(),
});

const toolConfig = z.strictObject({
  functionCallingConfig: z
    .strictObject({
      mode: z.enum(['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED']).optional(),
      allowedFunctionNames: z.array(z.string()).optional(),
      streamFunctionCallArguments: z.boolean().optional(),
    })
    .optional(),
  retrievalConfig: record.optional(),
  includeServerSideToolInvocations: z.boolean().optional(),
});

const THINKING_LEVELS = ['THINKING_LEVEL_UNSPECIFIED', 'MINIMAL', 'LOW', 'MEDIUM', 'HIGH'] as const;

const generationConfig = z.strictObject({
  stopSequences: z.array(z.string()).max(5).optional(),
  responseMimeType: z.string().optional(),
  responseSchema: openApiSchema.optional(),
  responseJsonSchema: z.unknown().optional(),
  responseModalities: z.array(z.string()).optional(),
  candidateCount: z.number().int().min(1).max(8).optional(),
  maxOutputTokens: z.number().int().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  topK: z.number().int().min(1).optional(),
  seed: z.number().int().optional(),
  presencePenalty: z.number().min(-2).max(2).optional(),
  frequencyPenalty: z.number().min(-2).max(2).optional(),
  responseLogprobs: z.boolean().optional(),
  logprobs: z.number().int().min(0).max(20).optional(),
  enableEnhancedCivicAnswers: z.boolean().optional(),
  speechConfig: record.optional(),
  thinkingConfig: z
    .strictObject({
      includeThoughts: z.boolean().optional(),
      thinkingBudget: z.number().int().min(-1).optional(),
      thinkingLevel: z.preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), z.enum(THINKING_LEVELS)).optional(),
    })
    .optional(),
  imageConfig: record.optional(),
  mediaResolution: z.string().optional(),
});

const HARM_BLOCK_THRESHOLDS = ['HARM_BLOCK_THRESHOLD_UNSPECIFIED', 'BLOCK_LOW_AND_ABOVE', 'BLOCK_MEDIUM_AND_ABOVE', 'BLOCK_ONLY_HIGH', 'BLOCK_NONE', 'OFF'] as const;

const safetySetting = z.strictObject({
  category: z.string().regex(/^HARM_CATEGORY_[A-Z_]+$/, 'expected a HarmCategory such as HARM_CATEGORY_HARASSMENT'),
  threshold: z.enum(HARM_BLOCK_THRESHOLDS),
  method: z.string().optional(),
});

const generateFields = {
  contents: z.array(content).min(1),
  systemInstruction: systemInstruction.optional(),
  tools: z.array(tool).optional(),
  toolConfig: toolConfig.optional(),
  generationConfig: generationConfig.optional(),
  safetySettings: z.array(safetySetting).optional(),
  cachedContent: z.string().min(1).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  serviceTier: z.string().optional(),
  store: z.boolean().optional(),
  continuationToken: z.string().optional(),
};

/** The path names the model; a `model` in the body (the resource name, optional) is taken as said and otherwise ignored. */
/** generateContent's and countTokens' bodies, as validated (also the OpenAPI document's request schemas). */
export const generateBody = z.strictObject({ model: z.string().optional(), ...generateFields });
export const countBody = z.strictObject({
  contents: z.array(content).min(1).optional(),
  generateContentRequest: z.strictObject({ model: z.string().min(1), ...generateFields }).optional(),
});

const GENERATE_SHAPE = shapeOf(generateBody, openApiSchema);
const COUNT_SHAPE = shapeOf(countBody, openApiSchema);

/**
 * A generateContent body as Google reads it: JSON field names, lists. The body itself when it was
 * written so (the common case); a copy otherwise, with nothing left out. A Gemini upstream is sent
 * this, so that the relay's own edits (the output cap, the upstream's model name) find their fields.
 */
export const generateBodyForGoogle = (body: Readonly<Record<string, unknown>>) => withJsonNames(body, GENERATE_SHAPE) as Readonly<Record<string, unknown>>;
export const countBodyForGoogle = (body: Readonly<Record<string, unknown>>) => withJsonNames(body, COUNT_SHAPE) as Readonly<Record<string, unknown>>;

export type GenerateBody = z.infer<typeof generateBody>;
export type Part = z.infer<typeof part>;

/** A generateContent call as parsed at the edge: the public model, how to answer, the typed body and the body as sent. */
export interface GenerateRequest {
  readonly model: string;
  readonly stream: boolean;
  /** `alt=sse`: server-sent events; otherwise a stream is one JSON array written as it grows. */
  readonly sse: boolean;
  readonly body: GenerateBody;
  /** Exactly what the caller sent; a Gemini upstream is sent it in Google's JSON names (generateBodyForGoogle). */
  readonly raw: Readonly<Record<string, unknown>>;
}

export interface CountTokensRequest {
  readonly model: string;
  /** What is counted: the contents alone, or a whole generateContent request. */
  readonly body: GenerateBody;
  /** Exactly what the caller sent; a Gemini upstream is sent it in Google's JSON names (countBodyForGoogle). */
  readonly raw: Readonly<Record<string, unknown>>;
}

/** `/v1beta/models/{model}:{method}` (or `/v1/…`): the model id, URL-decoded, without a `models/` prefix. */
export function modelMethodOf(path: string): { model: string; method: string } {
  const match = /^\/v1(?:beta)?\/models\/(.+):([A-Za-z]+)$/.exec(path);
  let model = '';
  try {
    model = match === null ? '' : decodeURIComponent(match[1]!);
  } catch {
    // Reported below.
  }
  if (model.startsWith('models/')) model = model.slice('models/'.length);
  if (model === '') throw new GatewayError('model_not_found', 'The model name in the path is missing or not validly encoded.', { param: 'model' });
  return { model, method: match![2]! };
}

export function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

function pathOf(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`;
  return out;
}

function expectedPhrase(expected: string): string {
  if (expected === 'int') return 'an integer';
  if (expected === 'record') return 'an object';
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return JSON.stringify(value);
}

/** A zod issue worded as Google words its own, naming the field at fault. */
export function issueError(issue: z.core.$ZodIssue): GatewayError {
  const at = pathOf(issue.path);
  switch (issue.code) {
    case 'unrecognized_keys': {
      const name = issue.keys[0]!;
      return invalid(at === '' ? name : `${at}.${name}`, `Invalid JSON payload received. Unknown name "${name}"${at === '' ? '' : ` at '${at}'`}: Cannot find field.`);
    }
    case 'invalid_type':
      if (issue.input === undefined) return invalid(at, `Missing required field '${at}'.`);
      return invalid(at, `Invalid value at '${at}': expected ${expectedPhrase(issue.expected)}, got ${describe(issue.input)}.`);
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? `at least ${String(issue.minimum)}` : `at most ${String(issue.maximum)}`;
      if (issue.origin === 'array') return invalid(at, `Invalid value at '${at}': expected ${bound} items.`);
      if (issue.origin === 'string') return invalid(at, `Invalid value at '${at}': must not be empty.`);
      return invalid(at, `Invalid value at '${at}': must be ${bound}, got ${describe(issue.input)}.`);
    }
    case 'invalid_value':
      return invalid(at, issue.message.startsWith('Please') ? issue.message : `Invalid value at '${at}': ${describe(issue.input)}; expected one of ${issue.values.map((v) => String(v)).join(', ')}.`);
    default:
      return invalid(at, `Invalid value at '${at}': ${issue.message}.`);
  }
}

function parseWith<T>(schema: z.ZodType<T>, forGoogle: (body: Readonly<Record<string, unknown>>) => unknown, body: unknown): T {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_json', 'Invalid JSON payload received. Expected a GenerateContentRequest object.');
  const parsed = schema.safeParse(forGoogle(body as Record<string, unknown>), { reportInput: true });
  if (!parsed.success) throw issueError(parsed.error.issues[0]!);
  return parsed.data;
}

/** What zod cannot say in a schema: one data member per part, and the rules between fields. */
function checkBody(body: GenerateBody, at: string): void {
  body.contents.forEach((c, i) => {
    c.parts.forEach((p, j) => {
      const where = `${at}contents[${i}].parts[${j}]`;
      checkPart(p, where);
      if (p.functionCall !== undefined && c.role !== 'model') throw invalid(`${where}.functionCall`, `A functionCall part must be in a content with role "model" ('${where}').`);
      if (p.functionResponse !== undefined && c.role === 'model') throw invalid(`${where}.functionResponse`, `A functionResponse part must be in a content with role "user" ('${where}').`);
    });
  });
  body.systemInstruction?.parts.forEach((p, j) => checkPart(p, `${at}systemInstruction.parts[${j}]`));
  const config = body.generationConfig ?? {};
  const cfg = `${at}generationConfig`;
  if (config.logprobs !== undefined && config.responseLogprobs !== true) throw invalid(`${cfg}.logprobs`, `'${cfg}.logprobs' requires '${cfg}.responseLogprobs' to be true.`);
  if (config.responseSchema !== undefined && config.responseJsonSchema !== undefined) {
    throw invalid(`${cfg}.responseJsonSchema`, `'${cfg}.responseJsonSchema' and '${cfg}.responseSchema' cannot both be set.`);
  }
  if ((config.responseSchema !== undefined || config.responseJsonSchema !== undefined) && config.responseMimeType !== 'application/json' && config.responseMimeType !== 'text/x.enum') {
    throw invalid(`${cfg}.responseMimeType`, `A response schema requires '${cfg}.responseMimeType' to be application/json or text/x.enum.`);
  }
  const thinking = config.thinkingConfig;
  if (thinking?.thinkingBudget !== undefined && thinking.thinkingLevel !== undefined) {
    throw invalid(`${cfg}.thinkingConfig`, `'${cfg}.thinkingConfig.thinkingBudget' and 'thinkingLevel' cannot both be set.`);
  }
  const declared = new Set<string>();
  body.tools?.forEach((t, k) =>
    t.functionDeclarations?.forEach((d, n) => {
      const where = `${at}tools[${k}].functionDeclarations[${n}]`;
      if (d.parameters !== undefined && d.parametersJsonSchema !== undefined) throw invalid(`${where}.parametersJsonSchema`, `'${where}.parametersJsonSchema' and 'parameters' cannot both be set.`);
      if (declared.has(d.name)) throw invalid(`${where}.name`, `Duplicate function declaration name: ${d.name}.`);
      declared.add(d.name);
    }),
  );
  const calling = body.toolConfig?.functionCallingConfig;
  const names = calling?.allowedFunctionNames;
  if (names !== undefined) {
    const where = `${at}toolConfig.functionCallingConfig.allowedFunctionNames`;
    if (calling!.mode !== 'ANY' && calling!.mode !== 'VALIDATED') throw invalid(where, `'${where}' may only be set when the mode is ANY or VALIDATED.`);
    names.forEach((name, i) => {
      if (!declared.has(name)) throw invalid(`${where}[${i}]`, `Function ${name} in '${where}' is not declared in tools.`);
    });
  }
}

function checkPart(p: Part, at: string): void {
  const set = DATA_FIELDS.filter((field) => p[field] !== undefined);
  if (set.length === 0) throw invalid(at, `Invalid value at '${at}': a part needs one of ${DATA_FIELDS.join(', ')}.`);
  if (set.length > 1) throw invalid(`${at}.${set[1]}`, `Invalid JSON payload received. Oneof field 'data' is already set at '${at}'. Cannot set '${set[1]}'.`);
}

export function parseGenerateRequest(body: unknown, wire: WireRequest): GenerateRequest {
  const { model, method } = modelMethodOf(wire.path);
  const stream = method === 'streamGenerateContent';
  const alt = wire.query.get('alt');
  if (alt !== null && alt !== 'sse' && alt !== 'json') throw invalid('alt', `Invalid value at 'alt': ${JSON.stringify(alt)}; expected sse or json.`);
  const parsed = parseWith(generateBody, generateBodyForGoogle, body);
  checkBody(parsed, '');
  return { model, stream, sse: alt === 'sse', body: parsed, raw: body as Record<string, unknown> };
}

export function parseCountTokensRequest(body: unknown, wire: WireRequest): CountTokensRequest {
  const { model } = modelMethodOf(wire.path);
  const parsed = parseWith(countBody, countBodyForGoogle, body);
  if ((parsed.contents === undefined) === (parsed.generateContentRequest === undefined)) {
    throw invalid('contents', "Send either 'contents' or 'generateContentRequest', not both and not neither.");
  }
  const inner: GenerateBody = parsed.generateContentRequest ?? { contents: parsed.contents! };
  checkBody(inner, parsed.generateContentRequest === undefined ? '' : 'generateContentRequest.');
  return { model, body: inner, raw: body as Record<string, unknown> };
}

/** Every text of a request, for Sluice's own count: Google counts the system instruction and tool declarations too. */
export function inputTexts(body: GenerateBody): string[] {
  const texts: string[] = [];
  const addParts = (parts: readonly Part[]) => {
    for (const p of parts) {
      if (typeof p.text === 'string' && p.thought !== true) texts.push(p.text);
      else if (p.functionCall !== undefined) texts.push(p.functionCall.name, JSON.stringify(p.functionCall.args ?? {}));
      else if (p.functionResponse !== undefined) texts.push(JSON.stringify(p.functionResponse.response));
    }
  };
  if (body.systemInstruction !== undefined) addParts(body.systemInstruction.parts);
  for (const c of body.contents) addParts(c.parts);
  for (const t of body.tools ?? []) for (const d of t.functionDeclarations ?? []) texts.push(JSON.stringify(d));
  return texts;
}
