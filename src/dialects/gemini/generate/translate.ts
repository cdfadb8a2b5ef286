import type { GatewayError } from '../../../core/errors.js';
import type { ModelledField } from '../../../generation/capabilities.js';
import { isDocumentMediaType, type ContentPart, type DocumentPart, type GenerationRequest, type ImagePart, type Message, type ReasoningEffort, type ResponseFormat, type ToolChoice, type ToolDefinition } from '../../../generation/model.js';
import { isGoogleSchema, jsonSchemaOf } from './openapi-schema.js';
import type { GenerateBody, GenerateRequest, Part } from './request.js';
import { openSeal } from './thought-signatures.js';

/** Refuses what the chosen upstream cannot do: a 400 naming the parameter, the model and the upstream (capabilities.ts's unsupported). */
export type Refuse = (param: string, what: string) => GatewayError;

/** Google's names for the request fields checkSupported names. */
const GEMINI_NAMES: Readonly<Record<ModelledField, string>> = {
  n: 'generationConfig.candidateCount',
  temperature: 'generationConfig.temperature',
  logprobs: 'generationConfig.responseLogprobs',
  logit_bias: 'logit_bias', // Gemini has none: never set from this dialect
  presence_penalty: 'generationConfig.presencePenalty',
  frequency_penalty: 'generationConfig.frequencyPenalty',
  top_k: 'generationConfig.topK',
  stop: 'generationConfig.stopSequences',
  response_format: 'generationConfig.responseMimeType',
};

export const geminiParam = (field: ModelledField): string => GEMINI_NAMES[field];

/**
 * Thresholds that ask for no filtering: an upstream without Google's configurable filters is
 * already at that setting, so these are safe to ignore. Any stricter threshold would silently stop
 * applying on another vendor, and is refused.
 */
const NO_FILTERING = new Set(['BLOCK_NONE', 'OFF', 'HARM_BLOCK_THRESHOLD_UNSPECIFIED']);

/** Gemini's thinking budgets as the core's effort levels (the inverse of the Gemini adapter's table). */
function effortOfBudget(budget: number): ReasoningEffort {
  if (budget === -1) return 'medium'; // dynamic: the model decides
  if (budget <= 512) return 'minimal';
  if (budget <= 1024) return 'low';
  if (budget <= 8192) return 'medium';
  return 'high';
}

function isHttpUrl(uri: string): boolean {
  return /^https?:\/\//i.test(uri);
}

/** Whether the caller asked to see thoughts (Gemini hides them otherwise, signatures aside). */
export function showsThoughts(body: GenerateBody): boolean {
  return body.generationConfig?.thinkingConfig?.includeThoughts === true;
}

/**
 * The generation model of a generateContent request, for an upstream that does not speak Gemini.
 * What Gemini alone has (cached content, code execution, search grounding, non-image media, strict
 * safety settings, audio or image output) is refused by name through `refuse`.
 */
export function toGenerationRequest(request: GenerateRequest, refuse: Refuse): GenerationRequest {
  const b = request.body;
  if (b.cachedContent !== undefined) throw refuse('cachedContent', "'cachedContent' (a Gemini context cache)");
  if (b.continuationToken !== undefined) throw refuse('continuationToken', "'continuationToken'");
  b.safetySettings?.forEach((setting, i) => {
    if (!NO_FILTERING.has(setting.threshold)) throw refuse(`safetySettings[${i}].threshold`, `'safetySettings' with threshold ${setting.threshold} (Google's safety filters; only BLOCK_NONE or OFF can be honoured elsewhere)`);
  });

  const messages: Message[] = [];
  if (b.systemInstruction !== undefined) {
    const parts = b.systemInstruction.parts.map((p, j): ContentPart => {
      if (typeof p.text !== 'string') throw refuse(`systemInstruction.parts[${j}]`, 'a system instruction part other than text');
      return { type: 'text', text: p.text };
    });
    if (parts.length > 0) messages.push({ role: 'system', content: parts });
  }
  messages.push(...conversation(b, refuse));

  const { tools, toolChoice } = toolsOf(b, refuse);
  const config = b.generationConfig ?? {};
  for (const field of ['speechConfig', 'imageConfig', 'mediaResolution', 'enableEnhancedCivicAnswers'] as const) {
    if (config[field] !== undefined) throw refuse(`generationConfig.${field}`, `'generationConfig.${field}'`);
  }
  if (config.responseModalities?.some((m) => m.toUpperCase() !== 'TEXT')) throw refuse('generationConfig.responseModalities', 'output other than TEXT');
  const thinking = config.thinkingConfig;
  let reasoning: GenerationRequest['reasoning'];
  if (thinking !== undefined && thinking.thinkingBudget !== 0) {
    const level = thinking.thinkingLevel;
    if (level !== undefined && level !== 'THINKING_LEVEL_UNSPECIFIED') reasoning = { effort: level.toLowerCase() as ReasoningEffort };
    else if (thinking.thinkingBudget !== undefined) reasoning = { effort: effortOfBudget(thinking.thinkingBudget) };
    else if (thinking.includeThoughts === true) reasoning = { effort: 'medium' };
  }

  return {
    model: request.model,
    messages,
    tools,
    toolChoice,
    parallelToolCalls: undefined,
    responseFormat: responseFormatOf(config, refuse),
    maxOutputTokens: config.maxOutputTokens,
    temperature: config.temperature,
    topP: config.topP,
    topK: config.topK,
    stop: config.stopSequences ?? [],
    n: config.candidateCount ?? 1,
    presencePenalty: config.presencePenalty,
    frequencyPenalty: config.frequencyPenalty,
    logitBias: undefined,
    seed: config.seed,
    user: undefined,
    logprobs: config.responseLogprobs === true ? { top: config.logprobs ?? 0 } : undefined,
    reasoning,
    // Labels are the caller's own bookkeeping; `store` and `serviceTier` are hints with no effect on the answer.
    metadata: b.labels,
    extensions: {},
  };
}

function responseFormatOf(config: NonNullable<GenerateBody['generationConfig']>, refuse: Refuse): ResponseFormat | undefined {
  const mime = config.responseMimeType;
  if (mime === undefined || mime === 'text/plain') return undefined;
  if (mime !== 'application/json') throw refuse('generationConfig.responseMimeType', `responseMimeType ${mime}`);
  if (config.responseJsonSchema !== undefined) {
    const schema = config.responseJsonSchema;
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return { type: 'json_schema', name: 'response', schema: {}, strict: undefined, description: undefined };
    if (isGoogleSchema(schema)) return { type: 'json_schema', name: 'response', schema: jsonSchemaOf(schema, 'generationConfig.responseJsonSchema'), strict: undefined, description: undefined };
    return { type: 'json_schema', name: 'response', schema: schema as Record<string, unknown>, strict: undefined, description: undefined };
  }
  if (config.responseSchema !== undefined) {
    return { type: 'json_schema', name: 'response', schema: jsonSchemaOf(config.responseSchema, 'generationConfig.responseSchema'), strict: undefined, description: undefined };
  }
  return { type: 'json_object' };
}

function toolsOf(b: GenerateBody, refuse: Refuse): { tools: ToolDefinition[]; toolChoice: ToolChoice | undefined } {
  const calling = b.toolConfig?.functionCallingConfig;
  if (b.toolConfig?.retrievalConfig !== undefined) throw refuse('toolConfig.retrievalConfig', "'toolConfig.retrievalConfig'");
  // VALIDATED: the model may answer or call, and its calls follow the schemas: strict tools.
  const strict = calling?.mode === 'VALIDATED' ? true : undefined;
  let tools: ToolDefinition[] = [];
  b.tools?.forEach((t, k) => {
    for (const [kind, value] of Object.entries(t)) {
      if (kind !== 'functionDeclarations' && value !== undefined) throw refuse(`tools[${k}].${kind}`, `the Gemini tool '${kind}'`);
    }
    t.functionDeclarations?.forEach((d, n) => {
      const at = `tools[${k}].functionDeclarations[${n}]`;
      if (d.behavior !== undefined) throw refuse(`${at}.behavior`, `'${at}.behavior'`);
      if (d.response !== undefined || d.responseJsonSchema !== undefined) throw refuse(`${at}.response`, 'a declared function response schema');
      const parameters = d.parametersJsonSchema ?? (d.parameters === undefined ? { type: 'object', properties: {} } : jsonSchemaOf(d.parameters, `${at}.parameters`));
      tools.push({ name: d.name, description: d.description, parameters, strict });
    });
  });
  const allowed = calling?.allowedFunctionNames;
  let toolChoice: ToolChoice | undefined;
  switch (calling?.mode) {
    case 'NONE':
      toolChoice = { type: 'none' };
      break;
    case 'ANY':
      if (allowed?.length === 1) toolChoice = { type: 'tool', name: allowed[0]! };
      else {
        toolChoice = { type: 'required' };
        // "Any of these": the others are not offered.
        if (allowed !== undefined) tools = tools.filter((t) => allowed.includes(t.name));
      }
      break;
    default:
      toolChoice = undefined;
  }
  return { tools, toolChoice };
}

interface PendingCall {
  readonly id: string;
  readonly name: string;
  answered: boolean;
}

/**
 * The contents as messages. Consecutive contents of one role are one turn (a streamed answer comes
 * back as one content per chunk). Calls without an id get one; a function response finds its call
 * by id, else the first unanswered call of that name. Thoughts: a part whose signature is a
 * Sluice seal brings back the reasoning blocks it sealed; other signatures (Google's own, the
 * "skip" placeholder) mean nothing to another vendor and are dropped; thought text without a
 * seal goes as unsigned reasoning, which upstreams that need signatures leave out.
 */
function conversation(b: GenerateBody, refuse: Refuse): Message[] {
  const messages: { role: 'user' | 'assistant'; content: ContentPart[] }[] = [];
  const calls: PendingCall[] = [];
  let generatedIds = 0;
  b.contents.forEach((c, i) => {
    const role = c.role === 'model' ? 'assistant' : 'user';
    let turn = messages.at(-1);
    if (turn?.role !== role) messages.push((turn = { role, content: [] }));
    const out = turn.content;
    let thought = '';
    const flushThought = () => {
      if (thought !== '') out.push({ type: 'reasoning', text: thought });
      thought = '';
    };
    c.parts.forEach((p, j) => {
      const at = `contents[${i}].parts[${j}]`;
      const sealed = p.thoughtSignature === undefined ? undefined : openSeal(p.thoughtSignature);
      if (sealed !== undefined) {
        thought = ''; // the seal holds these thoughts whole
        for (const block of sealed) out.push('redacted' in block ? { type: 'reasoning', text: '', redactedData: block.redacted } : { type: 'reasoning', text: block.text, signature: block.signature });
      }
      if (p.thought === true) {
        if (sealed === undefined) thought += p.text ?? '';
        return;
      }
      flushThought();
      out.push(...partOf(p, at, role, refuse, calls, () => `call_${generatedIds++}`));
    });
    flushThought();
  });
  return messages.filter((m) => m.content.length > 0);
}

function partOf(p: Part, at: string, role: 'user' | 'assistant', refuse: Refuse, calls: PendingCall[], newId: () => string): ContentPart[] {
  if (typeof p.text === 'string') return p.text === '' ? [] : [{ type: 'text', text: p.text }];
  // Roles were checked at parsing: calls come from the model, responses from the user.
  if (p.functionCall !== undefined) {
    const id = p.functionCall.id ?? newId();
    calls.push({ id, name: p.functionCall.name, answered: false });
    return [{ type: 'tool_call', id, name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) }];
  }
  if (p.functionResponse !== undefined) {
    const r = p.functionResponse;
    if (r.parts !== undefined) throw refuse(`${at}.functionResponse.parts`, 'multimodal function responses');
    const call = (r.id === undefined ? undefined : calls.find((c) => c.id === r.id)) ?? calls.find((c) => !c.answered && c.name === r.name);
    if (call !== undefined) call.answered = true;
    const keys = Object.keys(r.response);
    return [
      {
        type: 'tool_result',
        toolCallId: call?.id ?? r.id ?? newId(),
        name: r.name,
        content: [{ type: 'text', text: JSON.stringify(r.response) }],
        // Google's convention: {"error": …} reports a failed call.
        ...(keys.length === 1 && keys[0] === 'error' ? { isError: true } : {}),
      },
    ];
  }
  const media = p.inlineData ?? p.fileData;
  if (media !== undefined && role === 'user') {
    const part = imageOf(p) ?? documentOf(p);
    if (part !== undefined) return [part];
    throw refuse(`${at}.${p.inlineData === undefined ? 'fileData' : 'inlineData'}`, `${media.mimeType ?? 'this'} media (images; PDF and plain-text documents inline or a PDF by http(s) URL)`);
  }
  const kind = Object.keys(p).find((key) => key !== 'thought' && key !== 'thoughtSignature') ?? 'part';
  throw refuse(`${at}.${kind}`, `a '${kind}' part in a ${role === 'user' ? 'user' : 'model'} turn`);
}

function documentOf(p: Part): DocumentPart | undefined {
  const blob = p.inlineData;
  if (blob !== undefined) {
    if (!isDocumentMediaType(blob.mimeType)) return undefined;
    return { type: 'document', source: { kind: 'inline', mediaType: blob.mimeType, data: blob.data }, ...(blob.displayName ? { name: blob.displayName } : {}) };
  }
  const file = p.fileData!;
  if (!isHttpUrl(file.fileUri) || file.mimeType !== 'application/pdf') return undefined;
  return { type: 'document', source: { kind: 'url', url: file.fileUri }, ...(file.displayName ? { name: file.displayName } : {}) };
}

function imageOf(p: Part): ImagePart | undefined {
  if (p.inlineData !== undefined) {
    return p.inlineData.mimeType.startsWith('image/') ? { type: 'image', source: { kind: 'inline', mediaType: p.inlineData.mimeType, data: p.inlineData.data } } : undefined;
  }
  const file = p.fileData!;
  if (!isHttpUrl(file.fileUri) || (file.mimeType !== undefined && !file.mimeType.startsWith('image/'))) return undefined;
  return { type: 'image', source: { kind: 'url', url: file.fileUri } };
}
