import http, { type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { extendFake, json, startFakeServer, type FakeUpstream, type RecordedRequest } from './fake-server.js';
import { startFakeOpenAI } from './fake-openai-upstream.js';

/**
 * A stand-in for an Azure OpenAI resource and its Microsoft Entra ID tenant, checking what they
 * check and answering as they answer (Azure's documented REST reference and error bodies):
 *
 * - credentials: the `api-key` header, or `Authorization: Bearer` with a token its own Entra fake
 *   issued and that has not expired; else 401 with Azure's body.
 * - the data plane: `/openai/deployments/{deployment}/{chat/completions|completions|embeddings}`
 *   with an `api-version` it knows (else 404 "Resource not found", as Azure; `stream_options` only
 *   from 2024-09-01-preview), `/openai/responses`
 *   from api-version 2025-03-01-preview only, and the v1 API `/openai/v1/{…|responses}` with the
 *   deployment in `model`; a deployment it does not have is 404 `DeploymentNotFound`. The deployments
 *   list, `GET /openai/deployments?api-version=2022-12-01`.
 * - generation is the vLLM fake's (fake-openai-upstream.ts, behind this one, asked for the
 *   deployment's model), with Azure's framing on top: a stream opens with a chunk whose `choices` is
 *   empty and whose `id` and `model` are "" (the prompt filter results); whole chat answers carry
 *   `prompt_filter_results`.
 * - content filtering: a prompt containing "FILTERME" is refused with Azure's 400 `content_filter`
 *   body (its `innererror`); the vLLM fake's "forbidden" ends a choice with finish_reason content_filter.
 * - throttling: a deployment in `throttled` answers 429 with `retry-after` and `retry-after-ms`.
 *
 * The Entra fake serves `POST /{tenant}/oauth2/v2.0/token` (the client-credentials grant, a form
 * body): the tenant, client id, secret and scope must be the configured ones, else Entra's error
 * body with its AADSTS code; tokens live `tokenLifetimeSeconds` and are counted.
 */
export interface FakeAzureOptions {
  readonly apiKey?: string;
  readonly entra?: { readonly tenantId: string; readonly clientId: string; readonly clientSecret: string; readonly tokenLifetimeSeconds: number };
  /** Deployment name → the model it carries (`gpt-4o`). */
  readonly deployments: Readonly<Record<string, string>>;
}

export interface FakeAzure extends FakeUpstream {
  /** The Entra fake's address: a provider's `entra.authority_url`. */
  readonly authorityUrl: string;
  /** Token requests the Entra fake answered with a token, and those it refused. */
  readonly tokensIssued: number;
  readonly tokensRefused: number;
  /** Requests refused for an expired or unknown bearer token. */
  readonly expiredTokensSeen: number;
  /** Every access token issued so far (secrets a test looks for where none may appear). */
  issuedTokens(): string[];
  /** Deployments answering 429. */
  readonly throttled: Set<string>;
  /** The vLLM fake doing the generation (its `behaviour` paces streams). */
  readonly backend: FakeUpstream;
}

export const AZURE_API_VERSIONS = new Set(['2022-12-01', '2023-05-15', '2024-02-01', '2024-06-01', '2024-09-01-preview', '2024-10-21', '2024-12-01-preview', '2025-01-01-preview', '2025-03-01-preview', '2025-04-01-preview']);
export const CONTENT_FILTER_TRIGGER = 'FILTERME';
/** A streamed chat whose prompt contains this gets only Azure's prompt-filter chunk and then [DONE] (what reviewers saw a resource send). */
export const FILTER_CHUNK_ONLY_TRIGGER = 'NOTHINGBUTFILTER';
const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';
const DEPLOYMENT_ENDPOINTS = new Set(['chat/completions', 'completions', 'embeddings']);
const V1_ENDPOINTS = new Set(['chat/completions', 'completions', 'embeddings', 'responses']);

function azureError(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { code, message } }));
}

const SAFE = { filtered: false, severity: 'safe' };
const PROMPT_FILTER_RESULTS = [{ prompt_index: 0, content_filter_results: { hate: SAFE, jailbreak: { filtered: false, detected: false }, self_harm: SAFE, sexual: SAFE, violence: SAFE } }];

function contentFilterRefusal(res: ServerResponse): void {
  json(res, 400, {
    error: {
      message:
        "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
      type: null,
      param: 'prompt',
      code: 'content_filter',
      status: 400,
      innererror: {
        code: 'ResponsibleAIPolicyViolation',
        content_filter_result: { hate: SAFE, jailbreak: { filtered: false, detected: false }, self_harm: SAFE, sexual: SAFE, violence: { filtered: true, severity: 'medium' } },
      },
    },
  });
}

export async function startFakeAzure(options: FakeAzureOptions): Promise<FakeAzure> {
  const backend = await startFakeOpenAI({ models: [...new Set(Object.values(options.deployments))] });
  const tokens = new Map<string, number>();
  const throttled = new Set<string>();
  const counts = { issued: 0, refused: 0, expired: 0 };
  const entra = options.entra === undefined ? undefined : await startFakeEntra(options.entra, tokens, counts);

  const authorized = (request: RecordedRequest, res: ServerResponse): boolean => {
    const apiKey = request.headers['api-key'];
    if (typeof apiKey === 'string') {
      if (apiKey === options.apiKey) return true;
      azureError(res, 401, '401', 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.');
      return false;
    }
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (bearer !== undefined) {
      const expiresAt = tokens.get(bearer);
      if (expiresAt !== undefined && Date.now() < expiresAt) return true;
      counts.expired++;
      azureError(res, 401, '401', 'Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.');
      return false;
    }
    azureError(res, 401, '401', 'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.');
    return false;
  };

  const front = await startFakeServer('', async (request, res) => {
    if (!authorized(request, res)) return;
    const url = new URL(request.path, 'http://azure');
    const version = url.searchParams.get('api-version');
    const path = url.pathname;
    if (request.method === 'GET' && path === '/openai/deployments') {
      if (version !== '2022-12-01') return azureError(res, 404, '404', 'Resource not found');
      return json(res, 200, {
        data: Object.entries(options.deployments).map(([id, model], i) => ({ scale_settings: { scale_type: 'standard' }, model, owner: 'organization-owner', id, status: 'succeeded', created_at: 1_700_000_000 + i, updated_at: 1_700_000_000 + i, object: 'deployment' })),
        object: 'list',
      });
    }
    let deployment: string | undefined;
    let endpoint: string | undefined;
    const scoped = /^\/openai\/deployments\/([^/]+)\/(.+)$/.exec(path);
    if (scoped !== null) {
      if (version === null || !AZURE_API_VERSIONS.has(version) || !DEPLOYMENT_ENDPOINTS.has(scoped[2]!)) return azureError(res, 404, '404', 'Resource not found');
      deployment = decodeURIComponent(scoped[1]!);
      endpoint = scoped[2]!;
    } else if (path === '/openai/responses') {
      if (version === null || !AZURE_API_VERSIONS.has(version) || version < '2025-03-01-preview') return azureError(res, 404, '404', 'Resource not found');
      endpoint = 'responses';
    } else if (path.startsWith('/openai/v1/') && V1_ENDPOINTS.has(path.slice('/openai/v1/'.length))) {
      if (version !== null && version !== 'preview' && version !== 'latest') return azureError(res, 400, 'BadRequest', `API version not supported`);
      endpoint = path.slice('/openai/v1/'.length);
    } else {
      return azureError(res, 404, '404', 'Resource not found');
    }
    if (request.method !== 'POST' || request.body === undefined || typeof request.body !== 'object') return azureError(res, 400, 'BadRequest', 'The request body must be a JSON object.');
    deployment ??= typeof request.body.model === 'string' ? request.body.model : undefined;
    const model = deployment === undefined ? undefined : options.deployments[deployment];
    if (deployment === undefined || model === undefined) {
      return azureError(res, 404, 'DeploymentNotFound', 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.');
    }
    if (throttled.has(deployment)) {
      return azureError(res, 429, '429', `Requests to the ChatCompletions_Create Operation under Azure OpenAI API version ${version ?? 'v1'} have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 3 seconds.`, { 'retry-after': '3', 'retry-after-ms': '3000' });
    }
    // `stream_options` came with 2024-09-01-preview; an older version refuses it as an unknown argument.
    if (request.body.stream_options !== undefined && version !== null && version < '2024-09-01') {
      return json(res, 400, { error: { message: 'Unrecognized request argument supplied: stream_options', type: 'invalid_request_error', param: null, code: null } });
    }
    // An instruct deployment serves legacy completions only, as Azure's do.
    if (endpoint === 'chat/completions' && model.includes('instruct')) {
      return azureError(res, 400, 'OperationNotSupported', `The chatCompletion operation does not work with the specified model, ${model}. Please choose different model and try again. You can learn more about which models can be used with each operation here: https://go.microsoft.com/fwlink/?linkid=2197993.`);
    }
    if (endpoint !== 'embeddings' && JSON.stringify(request.body).includes(CONTENT_FILTER_TRIGGER)) return contentFilterRefusal(res);
    if (endpoint === 'chat/completions' && request.body.stream === true && JSON.stringify(request.body).includes(FILTER_CHUNK_ONLY_TRIGGER)) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.end(`data: ${JSON.stringify({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: PROMPT_FILTER_RESULTS })}

data: [DONE]

`);
      return;
    }
    const answer = await fetch(`${backend.url}/${endpoint}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...request.body, model }) });
    const chat = endpoint === 'chat/completions';
    if (!answer.headers.get('content-type')?.startsWith('text/event-stream')) {
      const body = (await answer.json()) as Record<string, unknown>;
      return json(res, answer.status, answer.ok && chat ? { ...body, prompt_filter_results: PROMPT_FILTER_RESULTS } : body);
    }
    res.writeHead(answer.status, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    if (chat) res.write(`data: ${JSON.stringify({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: PROMPT_FILTER_RESULTS })}\n\n`);
    for await (const chunk of answer.body!) {
      if (res.destroyed) return;
      res.write(chunk);
    }
    res.end();
  });

  const fake: FakeAzure = extendFake(front, {
    authorityUrl: entra?.url ?? '',
    get tokensIssued() {
      return counts.issued;
    },
    get tokensRefused() {
      return counts.refused;
    },
    get expiredTokensSeen() {
      return counts.expired;
    },
    issuedTokens: () => [...tokens.keys()],
    throttled,
    backend,
    close: async () => {
      await Promise.all([front.close(), backend.close(), entra?.close()]);
    },
  });
  return fake;
}

/** Microsoft Entra ID's v2.0 token endpoint, the client-credentials grant only. */
async function startFakeEntra(
  settings: NonNullable<FakeAzureOptions['entra']>,
  tokens: Map<string, number>,
  counts: { issued: number; refused: number },
): Promise<{ url: string; close(): Promise<void> }> {
  const refuse = (res: ServerResponse, status: number, error: string, code: number, description: string): void => {
    counts.refused++;
    json(res, status, {
      error,
      error_description: `AADSTS${code}: ${description}\r\nTrace ID: 0d1c5f7e-0000-4000-8000-000000000000\r\nCorrelation ID: 7a2c1b3d-0000-4000-8000-000000000000\r\nTimestamp: 2026-01-01 00:00:00Z`,
      error_codes: [code],
      timestamp: '2026-01-01 00:00:00Z',
      trace_id: '0d1c5f7e-0000-4000-8000-000000000000',
      correlation_id: '7a2c1b3d-0000-4000-8000-000000000000',
      error_uri: `https://login.microsoftonline.com/error?code=${code}`,
    });
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const match = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(req.url ?? '');
    if (req.method !== 'POST' || match === null) return void json(res, 404, { error: 'not_found' });
    if (!req.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) {
      return refuse(res, 400, 'invalid_request', 900144, "The request body must contain the following parameter: 'grant_type'.");
    }
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const tenant = decodeURIComponent(match[1]!);
    if (tenant !== settings.tenantId) return refuse(res, 400, 'invalid_request', 90002, `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`);
    if (form.get('grant_type') !== 'client_credentials') return refuse(res, 400, 'unsupported_grant_type', 70003, 'The app requested an unsupported grant type.');
    if (form.get('client_id') !== settings.clientId) {
      return refuse(res, 400, 'unauthorized_client', 700016, `Application with identifier '${form.get('client_id')}' was not found in the directory '${tenant}'.`);
    }
    if (form.get('client_secret') !== settings.clientSecret) {
      return refuse(res, 401, 'invalid_client', 7000215, `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${settings.clientId}'.`);
    }
    if (form.get('scope') !== COGNITIVE_SERVICES_SCOPE) return refuse(res, 400, 'invalid_scope', 70011, `The provided value for the input parameter 'scope' is not valid.`);
    const token = `eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.${randomBytes(48).toString('base64url')}`;
    tokens.set(token, Date.now() + settings.tokenLifetimeSeconds * 1000);
    counts.issued++;
    json(res, 200, { token_type: 'Bearer', expires_in: settings.tokenLifetimeSeconds, ext_expires_in: settings.tokenLifetimeSeconds, access_token: token });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
