import { generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anthropicHandler } from './fake-anthropic.js';
import { geminiHandler } from './fake-gemini.js';
import { fakeVector, NATIVE_DIMENSIONS } from './embedding-vectors.js';
import { extendFake, json, startFakeServer, type FakeUpstream, type RecordedRequest } from './fake-server.js';

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** The keys the fake's inner Gemini and Anthropic models take; Vertex's own callers never see them. */
const INNER_KEY = 'vertex-inner';
/** Google's limits for text embeddings on Vertex: 250 instances, one for gemini-embedding models. */
const MAX_INSTANCES = 250;

export interface ServiceAccountKey {
  readonly type: 'service_account';
  readonly project_id: string;
  readonly private_key_id: string;
  readonly private_key: string;
  readonly client_email: string;
  readonly client_id: string;
  readonly token_uri: string;
}

export interface FakeVertex extends FakeUpstream {
  /** The token endpoint (the key file's `token_uri`). */
  readonly tokenUri: string;
  /** The service account's key, as Google's console downloads it, and a file holding it. */
  readonly key: ServiceAccountKey;
  readonly keyFile: string;
  /** Another account's key (same email and key id, another private key): Google refuses its assertions. */
  readonly wrongKey: ServiceAccountKey;
  /** Token requests answered (refused ones included), and the access tokens issued. */
  readonly tokenRequests: number;
  readonly issuedTokens: readonly string[];
  /** How long the access tokens issued from now on live, in seconds (Google's: 3599). */
  tokenLifetimeS: number;
}

/**
 * A stand-in for Google Vertex AI and its OAuth token endpoint, checking what they check.
 *
 * The token endpoint (its own origin, as oauth2.googleapis.com is): `POST` form
 * `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`. The assertion must be an
 * RS256 JWT whose signature verifies against the service account's public key (found by the
 * header's `kid`), with `iss` = the account's email, `aud` = this token URI, `scope` holding
 * cloud-platform, and `iat`/`exp` current and at most an hour apart; otherwise 400 `invalid_grant`
 * with Google's descriptions. The answer is `{access_token, expires_in, token_type: "Bearer"}`.
 *
 * The model endpoints take `Authorization: Bearer` with a token this fake issued and that has not
 * expired (else 401 UNAUTHENTICATED, Google's body); the project and location of the path must be
 * the fake's (403 PERMISSION_DENIED otherwise, as for a project the account cannot use).
 * - Gemini (`/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent`,
 *   `:streamGenerateContent?alt=sse`, `:countTokens`): answered by fake-gemini.ts's model, which
 *   checks the body as Google's API does. countTokens takes Vertex's flat body ({contents,
 *   systemInstruction?, tools?, generationConfig?, model?}), not a generateContentRequest.
 * - Claude (`…/publishers/anthropic/models/{m}:rawPredict` and `:streamRawPredict`): the body must
 *   carry `anthropic_version: "vertex-2023-10-16"` and no `model` (400 invalid_request_error
 *   otherwise, Anthropic's body, as Vertex relays Anthropic's errors); then fake-anthropic.ts's
 *   model answers it. `…/anthropic/models/count-tokens:rawPredict` counts (the body names the model).
 * - Embeddings (`…/publishers/google/models/{m}:predict`): `{instances: [{content, task_type?,
 *   title?}], parameters?: {outputDimensionality?, autoTruncate?}}`; at most 250 instances (1 for
 *   gemini-embedding models); each prediction `{embeddings: {values, statistics: {token_count,
 *   truncated}}}` with fake-embedding vectors; token_count is the text's words.
 * - A model the fake does not serve: Vertex's 404 NOT_FOUND "Publisher Model `projects/…/models/…`
 *   was not found or your project does not have access to it."
 * - Publisher models (`GET /v1beta1/publishers/{google|anthropic}/models?pageSize&pageToken`):
 *   `{publisherModels: [{name: "publishers/…/models/…", versionId}], nextPageToken}`, `listPageMax` a page.
 * - Failures on demand through `behaviour` (a 429 RESOURCE_EXHAUSTED body, say), as every fake.
 */
export async function startFakeVertex(options: {
  project: string;
  location: string;
  geminiModels?: string[];
  claudeModels?: string[];
  embeddingModels?: string[];
  /** Seconds an access token lives (default 3599, as Google's). */
  tokenLifetimeS?: number;
  /** Publisher models listed per page (default 1000). */
  listPageMax?: number;
  /** Issue this access token every time instead of a random one (for recorded-request snapshots). */
  fixedToken?: string;
}): Promise<FakeVertex> {
  const geminiModels = options.geminiModels ?? ['gemini-2.5-flash'];
  const claudeModels = options.claudeModels ?? ['claude-sonnet-4-5@20250929'];
  const embeddingModels = new Set(options.embeddingModels ?? ['text-embedding-005', 'gemini-embedding-001']);
  const gemini = geminiHandler({ apiKey: INNER_KEY, models: geminiModels });
  const claude = anthropicHandler({ apiKey: INNER_KEY, models: claudeModels });

  const account = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyId = randomBytes(20).toString('hex');
  const email = `sluice-test@${options.project}.iam.gserviceaccount.com`;
  const publicKeys = new Map<string, KeyObject>([[keyId, account.publicKey]]);
  const tokens = new Map<string, number>();
  const issued: string[] = [];
  const state = { tokenRequests: 0, lifetime: options.tokenLifetimeS ?? 3599 };

  const tokenServer = http.createServer((req, res) => void answerTokenRequest(req, res));
  await new Promise<void>((resolve) => tokenServer.listen(0, '127.0.0.1', resolve));
  const tokenUri = `http://127.0.0.1:${(tokenServer.address() as AddressInfo).port}/token`;

  async function answerTokenRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    state.tokenRequests++;
    const grant = (description: string) => json(res, 400, { error: 'invalid_grant', error_description: description });
    if (req.method !== 'POST' || req.url !== '/token') return json(res, 404, { error: 'not_found' });
    if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) return json(res, 400, { error: 'invalid_request', error_description: 'Bad Request' });
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    if (form.get('grant_type') !== JWT_BEARER) return json(res, 400, { error: 'unsupported_grant_type', error_description: `Invalid grant_type: ${form.get('grant_type') ?? ''}` });
    const parts = (form.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return grant('Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
    let header: Record<string, unknown>;
    let claims: Record<string, unknown>;
    try {
      header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
      claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
    } catch {
      return grant('Invalid JWT: could not be parsed.');
    }
    const publicKey = typeof header.kid === 'string' ? publicKeys.get(header.kid) : undefined;
    if (header.alg !== 'RS256' || publicKey === undefined) return grant('Invalid grant: account not found');
    const signed = verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), publicKey, Buffer.from(parts[2]!, 'base64url'));
    if (!signed) return grant('Invalid JWT Signature.');
    const now = Math.floor(Date.now() / 1000);
    const { iat, exp } = claims;
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > 3600 || exp <= now || iat > now + 60) {
      return grant('Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
    }
    if (claims.iss !== email) return grant('Invalid grant: account not found');
    if (claims.aud !== tokenUri) return grant('Invalid JWT: Failed audience check.');
    if (typeof claims.scope !== 'string' || !claims.scope.split(' ').includes(SCOPE)) return json(res, 400, { error: 'invalid_scope', error_description: 'Invalid OAuth scope or ID token audience provided.' });
    const token = options.fixedToken ?? `ya29.fake-${randomBytes(24).toString('base64url')}`;
    tokens.set(token, Date.now() + state.lifetime * 1000);
    issued.push(token);
    json(res, 200, { access_token: token, expires_in: state.lifetime, token_type: 'Bearer' });
  }

  const googleError = (res: ServerResponse, code: number, status: string, message: string) => json(res, code, { error: { code, message, status } });
  const anthropicError = (res: ServerResponse, status: number, type: string, message: string) => json(res, status, { type: 'error', error: { type, message } });
  const listed = {
    google: [...geminiModels, ...embeddingModels, 'imagen-4.0-generate-001'].map((id) => ({ name: `publishers/google/models/${id}`, versionId: '001' })),
    anthropic: claudeModels.map((id) => {
      const [name, version] = id.split('@');
      return { name: `publishers/anthropic/models/${name}`, versionId: version ?? '001' };
    }),
  };

  const upstream = await startFakeServer('', async (request, res, behaviour, req) => {
    const authorization = request.headers.authorization;
    if (authorization === undefined) {
      return googleError(res, 401, 'UNAUTHENTICATED', 'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.');
    }
    const expiry = tokens.get(authorization.replace(/^Bearer /, ''));
    if (!authorization.startsWith('Bearer ') || expiry === undefined || expiry <= Date.now()) {
      return googleError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.');
    }
    const list = /^\/v1beta1\/publishers\/(google|anthropic)\/models(?:\?(.*))?$/.exec(request.path);
    if (request.method === 'GET' && list !== null) {
      const query = new URLSearchParams(list[2] ?? '');
      const all = listed[list[1] as 'google' | 'anthropic'];
      const size = Math.min(Number(query.get('pageSize') ?? 100), options.listPageMax ?? 1000);
      const start = Number(query.get('pageToken') ?? 0);
      const next = start + size < all.length ? String(start + size) : undefined;
      return json(res, 200, { publisherModels: all.slice(start, start + size), ...(next === undefined ? {} : { nextPageToken: next }) });
    }
    const call = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:?]+):([A-Za-z]+)(\?alt=sse)?$/.exec(request.path);
    if (request.method !== 'POST' || call === null) return googleError(res, 404, 'NOT_FOUND', `The requested URL ${request.path.replace(/\?.*/, '')} was not found on this server.`);
    const [, project, location, publisher, model, method, sse] = call as unknown as string[];
    if (project !== options.project || location !== options.location) {
      return googleError(res, 403, 'PERMISSION_DENIED', `Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/${project}/locations/${location}/publishers/${publisher}/models/${model}' (or it may not exist).`);
    }
    // A publisher model the location does not serve, or the project may not use, is Vertex's own 404 naming the full resource.
    const known = publisher === 'anthropic' ? model === 'count-tokens' || claudeModels.includes(model!) : method === 'predict' || geminiModels.includes(model!);
    if (!known) {
      return googleError(res, 404, 'NOT_FOUND', `Publisher Model \`projects/${project}/locations/${location}/publishers/${publisher}/models/${model}\` was not found or your project does not have access to it. Please ensure you are using a valid model version. For more information, see: https://cloud.google.com/vertex-ai/generative-ai/docs/learn/model-versions`);
    }
    if (publisher === 'anthropic') {
      const body = request.body;
      if (typeof body !== 'object' || body === null) return anthropicError(res, 400, 'invalid_request_error', 'Invalid JSON');
      if (body.anthropic_version !== 'vertex-2023-10-16') return anthropicError(res, 400, 'invalid_request_error', `anthropic_version: Input should be 'vertex-2023-10-16'`);
      const { anthropic_version: _version, ...rest } = body;
      const inner = { headers: { ...request.headers, 'x-api-key': INNER_KEY, 'anthropic-version': '2023-06-01' } };
      if (model === 'count-tokens' && method === 'rawPredict') return claude({ ...request, ...inner, path: '/v1/messages/count_tokens', body: rest }, res, behaviour, req);
      if (method !== 'rawPredict' && method !== 'streamRawPredict') return googleError(res, 400, 'INVALID_ARGUMENT', `Unknown method ${method} for anthropic models.`);
      if (body.model !== undefined) return anthropicError(res, 400, 'invalid_request_error', 'model: Extra inputs are not permitted');
      return claude({ ...request, ...inner, path: '/v1/messages', body: { model, ...rest } }, res, behaviour, req);
    }
    if (method === 'predict') return predict(res, model!, request.body);
    if (method === 'countTokens') {
      const { model: named, ...counted } = typeof request.body === 'object' && request.body !== null ? request.body : { model: undefined };
      if (named !== undefined && named !== `projects/${project}/locations/${location}/publishers/google/models/${model}`) return googleError(res, 400, 'INVALID_ARGUMENT', `model must name the model of the path, got ${JSON.stringify(named)}`);
      return gemini(geminiRequest(request, model!, method, '', { generateContentRequest: { model: `models/${model}`, ...counted } }), res, behaviour, req);
    }
    if (method !== 'generateContent' && method !== 'streamGenerateContent') return googleError(res, 400, 'INVALID_ARGUMENT', `Unknown method ${method}.`);
    return gemini(geminiRequest(request, model!, method, sse ?? '', request.body), res, behaviour, req);
  });

  /** The request as Google's own Gemini API would have had it, for fake-gemini.ts's model. */
  function geminiRequest(request: RecordedRequest, model: string, method: string, sse: string, body: unknown): RecordedRequest {
    return { ...request, headers: { ...request.headers, 'x-goog-api-key': INNER_KEY }, path: `/v1/models/${model}:${method}${sse}`, body };
  }

  function predict(res: ServerResponse, model: string, body: any): void {
    if (!embeddingModels.has(model)) return googleError(res, 404, 'NOT_FOUND', `Publisher Model \`projects/${options.project}/locations/${options.location}/publishers/google/models/${model}\` not found.`);
    if (typeof body !== 'object' || body === null || !Array.isArray(body.instances) || body.instances.length === 0) return googleError(res, 400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.');
    for (const name of Object.keys(body)) if (name !== 'instances' && name !== 'parameters') return googleError(res, 400, 'INVALID_ARGUMENT', `Invalid JSON payload received. Unknown name "${name}": Cannot find field.`);
    const limit = model.startsWith('gemini-embedding') ? 1 : MAX_INSTANCES;
    if (body.instances.length > limit) return googleError(res, 400, 'INVALID_ARGUMENT', `Unable to submit request because the model supports up to ${limit} instances per request, but got ${body.instances.length}. Reduce the number of instances and try again.`);
    const parameters = body.parameters ?? {};
    for (const name of Object.keys(parameters)) if (name !== 'outputDimensionality' && name !== 'autoTruncate') return googleError(res, 400, 'INVALID_ARGUMENT', `Unknown parameter ${name}.`);
    const dimensions = parameters.outputDimensionality ?? NATIVE_DIMENSIONS;
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > NATIVE_DIMENSIONS) return googleError(res, 400, 'INVALID_ARGUMENT', `outputDimensionality must be between 1 and ${NATIVE_DIMENSIONS}.`);
    const predictions = [];
    for (const instance of body.instances) {
      if (typeof instance !== 'object' || instance === null || typeof instance.content !== 'string') return googleError(res, 400, 'INVALID_ARGUMENT', 'Each instance needs a string content.');
      for (const name of Object.keys(instance)) if (!['content', 'task_type', 'title'].includes(name)) return googleError(res, 400, 'INVALID_ARGUMENT', `Unknown instance field ${name}.`);
      if (instance.title !== undefined && instance.task_type !== 'RETRIEVAL_DOCUMENT') return googleError(res, 400, 'INVALID_ARGUMENT', 'title is only valid with task_type RETRIEVAL_DOCUMENT.');
      const words = instance.content.split(/\s+/).filter(Boolean).length;
      predictions.push({ embeddings: { values: fakeVector(instance.content, dimensions), statistics: { token_count: words, truncated: false } } });
    }
    json(res, 200, { predictions, metadata: { billableCharacterCount: body.instances.reduce((sum: number, i: { content: string }) => sum + i.content.length, 0) } });
  }

  const keyOf = (privateKey: KeyObject): ServiceAccountKey => ({
    type: 'service_account',
    project_id: options.project,
    private_key_id: keyId,
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: email,
    client_id: '108234567890123456789',
    token_uri: tokenUri,
  });
  const key = keyOf(account.privateKey);
  const keyFile = join(mkdtempSync(join(tmpdir(), 'sluice-vertex-')), 'service-account.json');
  writeFileSync(keyFile, JSON.stringify(key, null, 2), { mode: 0o600 });

  const fake: FakeVertex = extendFake(upstream, {
    tokenUri,
    key,
    keyFile,
    wrongKey: keyOf(other.privateKey),
    get tokenRequests() {
      return state.tokenRequests;
    },
    issuedTokens: issued,
    get tokenLifetimeS() {
      return state.lifetime;
    },
    set tokenLifetimeS(value: number) {
      state.lifetime = value;
    },
    close: async () => {
      tokenServer.closeAllConnections();
      await Promise.all([upstream.close(), new Promise<void>((resolve) => tokenServer.close(() => resolve()))]);
    },
  });
  return fake;
}
