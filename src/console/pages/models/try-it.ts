// The "Try it" example of a model's page: one shell snippet, every variable it uses defined at its
// top, calling the operation the model is for.
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import type { Endpoint } from '../../../config/config-file.js';

/** What the snippet's key line holds until the reader puts a key there. */
const KEY_PLACEHOLDER = '<your API key>';

/**
 * A model's own operation, first of those it serves in this order: chat for a chat model (legacy
 * completions only for a model that serves nothing else of these), an embedding model's
 * embeddings, and so on.
 */
const PRIMARY: readonly Endpoint[] = ['chat', 'responses', 'embeddings', 'rerank', 'images', 'speech', 'transcriptions', 'moderations', 'completions'];

/** A shell word in single quotes: nothing in it is expanded. */
function quoted(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The request for each operation: its path, and its JSON body or form fields. */
function request(endpoint: Endpoint, model: string): { path: string; json?: unknown; form?: string[]; output?: string; before?: string } {
  switch (endpoint) {
    case 'chat':
      return { path: '/v1/chat/completions', json: { model, messages: [{ role: 'user', content: 'Say hi' }] } };
    case 'responses':
      return { path: '/v1/responses', json: { model, input: 'Say hi' } };
    case 'embeddings':
      return { path: '/v1/embeddings', json: { model, input: 'Say hi' } };
    case 'rerank':
      return { path: '/v1/rerank', json: { model, query: 'greeting', documents: ['Say hi', 'Goodbye'] } };
    case 'images':
      return { path: '/v1/images/generations', json: { model, prompt: 'A lighthouse at dawn', n: 1 } };
    case 'speech':
      return { path: '/v1/audio/speech', json: { model, input: 'Say hi', voice: 'alloy' }, output: 'speech.mp3' };
    case 'transcriptions':
      return { path: '/v1/audio/transcriptions', form: [`model=${model}`, 'file=@speech.wav'], before: '# speech.wav: a short recording of speech, in this directory' };
    case 'moderations':
      return { path: '/v1/moderations', json: { model, input: 'Say hi' } };
    case 'completions':
      return { path: '/v1/completions', json: { model, prompt: 'Say hi', max_tokens: 16 } };
  }
}

/**
 * The snippet: `SLUICE_URL` (this gateway as the reader reached it, `origin`), `SLUICE_KEY` (a
 * placeholder to replace), then one curl call of the model's own operation.
 */
export function tryIt(model: CatalogueModel, origin: string): string {
  const endpoint = PRIMARY.find((e) => model.endpoints.has(e)) ?? 'chat';
  const call = request(endpoint, model.id);
  const lines = [`SLUICE_URL=${quoted(origin)}`, `SLUICE_KEY=${quoted(KEY_PLACEHOLDER)}   # a key that may use this model (see /app/keys)`];
  if (call.before !== undefined) lines.push(call.before);
  const args = [`curl -sS "$SLUICE_URL${call.path}"`, `-H "Authorization: Bearer $SLUICE_KEY"`];
  if (call.json !== undefined) args.push(`-H 'content-type: application/json'`, `-d ${quoted(JSON.stringify(call.json))}`);
  for (const field of call.form ?? []) args.push(`-F ${quoted(field)}`);
  if (call.output !== undefined) args.push(`-o ${call.output}`);
  lines.push(args.join(' \\\n  '));
  return lines.join('\n');
}
