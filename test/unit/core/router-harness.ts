/**
 * Drives the real Router over scripted providers on virtual time. A request's attempt is served as
 * a dialect serves one: it asks the attempt's invoker for a whole answer, a stream (run through the
 * dialects' own `runStream`, so a failure after the first byte is handled as in production) or a
 * relay, and writes to a real (unconnected) ServerResponse.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Principal } from '../../../src/core/principal.js';
import { Catalogue, type CatalogueModel } from '../../../src/catalogue/catalogue.js';
import { parseConfig } from '../../../src/config/config-file.js';
import { runStream } from '../../../src/dialects/answer.js';
import { toGatewayError, type GatewayError } from '../../../src/core/errors.js';
import { splitChoices } from '../../../src/generation/fan-out.js';
import { generationRequest, type StreamPart, type Usage } from '../../../src/generation/model.js';
import type { Exchange } from '../../../src/generation/operation.js';
import type { WireOperation } from '../../../src/generation/provider.js';
import { newProgress, Router, type RouteProgress, type UpstreamTimer } from '../../../src/routing/router.js';
import { NO_TELEMETRY } from '../../../src/telemetry/telemetry.js';
import { registryOf, ScriptedProvider, type Step } from './scripted-provider.js';
import { VirtualTime } from './virtual-time.js';

/**
 * A catalogue from a configuration file's text (every provider is `openai` at a dead address: nothing
 * connects). Provider `e` is configured but has no adapter in the harness's registry.
 */
export function catalogueOf(models: string, routing = ''): Catalogue {
  const providers = ['a', 'b', 'c', 'd', 'e'].map((id) => `  - { id: ${id}, kind: openai, base_url: 'http://127.0.0.1:9/v1' }`).join('\n');
  return Catalogue.fromConfig(parseConfig(`${routing}\nproviders:\n${providers}\nmodels:\n${models}`, 'unit.yaml'));
}

const PRINCIPAL: Principal = { keyId: 'k', accountId: 'acc', accountName: 'acc', allowedModels: null, keyLimits: null, accountLimits: null };

export interface RequestOptions {
  readonly stream?: boolean;
  readonly n?: number;
  /** Relay the caller's own wire (a stream of events when `stream`). */
  readonly relay?: WireOperation;
  /** Read by the router's `gone()`; set it to have the caller leave (then call `progress.cancel()`). */
  readonly caller?: { left: boolean };
}

export interface Outcome {
  /** The failure the router threw, or undefined when the request was answered. */
  readonly error: GatewayError | undefined;
  readonly progress: RouteProgress;
  readonly res: ServerResponse & UpstreamTimer;
  /** The stream parts or relayed events the caller was sent, or the whole answer's choices' text. */
  readonly delivered: unknown[];
  /** The provider whose answer the caller got. */
  readonly servedBy: string | undefined;
}

export class RouterHarness {
  readonly time = new VirtualTime();
  readonly providers: Record<'a' | 'b' | 'c' | 'd', ScriptedProvider>;
  readonly router: Router;
  /** The router's random draws, in order; `random` supplies them. */
  draws = 0;

  constructor(
    readonly catalogue: Catalogue,
    public random: () => number = () => 0,
  ) {
    const clock = this.time.read;
    this.providers = { a: new ScriptedProvider('a', clock), b: new ScriptedProvider('b', clock), c: new ScriptedProvider('c', clock), d: new ScriptedProvider('d', clock) };
    this.router = new Router(registryOf(...Object.values(this.providers)), clock, () => {
      this.draws++;
      return this.random();
    });
  }

  model(id: string): CatalogueModel {
    const model = this.catalogue.get(id);
    if (model === undefined) throw new Error(`no model ${id} in the test's catalogue`);
    return model;
  }

  /** Queues steps on a provider. */
  script(provider: 'a' | 'b' | 'c' | 'd', ...steps: Step[]): void {
    this.providers[provider].next(...steps);
  }

  /** Starts a request; the caller then moves time on until it settles. */
  start(modelId: string, options: RequestOptions = {}): { progress: RouteProgress; outcome: Promise<Outcome> } {
    const model = this.model(modelId);
    const res = new ServerResponse(new IncomingMessage(new Socket())) as ServerResponse & UpstreamTimer;
    res.upstreamMs = 0;
    const progress = newProgress();
    const delivered: unknown[] = [];
    let servedBy: string | undefined;
    const caller = options.caller ?? { left: false };
    const run = this.router.run(
      {
        model,
        fallback: (id) => this.catalogue.get(id),
        gone: () => caller.left,
        res,
        telemetry: NO_TELEMETRY.generation({ requestId: 'r', headers: {}, route: 'unit', operation: 'unit', model: modelId, stream: options.stream ?? false, startedAt: 0 }),
        promptTokens: () => Promise.resolve(42),
        attempt: async (attempt) => {
          const request = generationRequest({ model: modelId, messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }], n: options.n ?? 1 });
          const subCalls = splitChoices(request, attempt.provider.capabilities(attempt.deployment.model).maxChoicesPerCall);
          const target = { model: attempt.deployment.model, requestId: 'r', signal: attempt.signal };
          if (options.relay !== undefined) {
            const relayed = await attempt.invoke.relay({ operation: options.relay, body: { model: modelId }, stream: options.stream ?? false, model: attempt.deployment.model, requestId: 'r', signal: attempt.signal });
            servedBy = attempt.provider.id;
            res.writeHead(200);
            if (!relayed.stream) delivered.push(relayed.body);
            else for await (const event of relayed.events) delivered.push(event);
            res.end();
            return;
          }
          if (options.stream !== true) {
            const result = await attempt.invoke.generate(subCalls, target);
            servedBy = attempt.provider.id;
            for (const choice of result.choices) delivered.push(choice.content);
            attempt.meter.usage = result.usage;
            res.writeHead(200).end('{}');
            return;
          }
          const parts = await attempt.invoke.stream(subCalls, target);
          servedBy = attempt.provider.id;
          const exchange: Exchange<unknown> = { request, principal: PRINCIPAL, model: attempt.deployment.model, provider: attempt.provider, requestId: 'r', res, signal: attempt.signal, invoke: attempt.invoke, meter: attempt.meter };
          const writer = new PartWriter(res);
          await runStream(
            exchange,
            writer,
            async () => {
              let usage: Usage | null = null;
              for await (const part of parts) {
                writer.send(part);
                delivered.push(part);
                if (part.type === 'usage') usage = part.usage;
              }
              return usage;
            },
            async () => ({ input: 42, output: delivered.length, cachedInput: 0, cacheWrite: 0, reasoning: 0 }),
          );
        },
      },
      progress,
    );
    const outcome = run.then(
      () => ({ error: undefined, progress, res, delivered, servedBy }),
      (thrown: unknown) => ({ error: toGatewayError(thrown), progress, res, delivered, servedBy }),
    );
    return { progress, outcome };
  }

  /** Runs a request to its end, moving virtual time from one timer to the next (at most `limitMs` in all). */
  async send(modelId: string, options: RequestOptions = {}, limitMs = 3_600_000): Promise<Outcome> {
    const { outcome } = this.start(modelId, options);
    return this.settled(outcome, limitMs);
  }

  /** Moves virtual time on, timer by timer, until `outcome` settles. */
  async settled(outcome: Promise<Outcome>, limitMs = 3_600_000): Promise<Outcome> {
    let done: Outcome | undefined;
    void outcome.then((result) => (done = result));
    const until = this.time.now + limitMs;
    for (;;) {
      await this.time.advance(0);
      if (done !== undefined) return done;
      const due = this.time.nextDue;
      if (due === undefined || due > until) throw new Error(`the request did not settle within ${limitMs} ms of virtual time`);
      await this.time.advance(due - this.time.now);
    }
  }

  /** Who answered each of `count` requests, one after another (each settles before the next starts). */
  async servedBy(modelId: string, count: number, options: RequestOptions = {}): Promise<string[]> {
    const served: string[] = [];
    for (let i = 0; i < count; i++) {
      const outcome = await this.send(modelId, options);
      if (outcome.error !== undefined) throw outcome.error;
      served.push(outcome.servedBy!);
    }
    return served;
  }

  /** Each deployment's state as /status shows it: `provider state`. */
  states(modelId: string): string[] {
    return this.router.deploymentStatus(this.model(modelId)).map((d) => `${d.provider} ${d.state}`);
  }
}

/** The smallest stream writer: its framing is irrelevant here, only when it started and how it ended. */
class PartWriter {
  private started = false;

  constructor(private readonly res: ServerResponse) {}

  get hasStarted(): boolean {
    return this.started;
  }

  send(part: StreamPart): void {
    if (!this.started) {
      this.started = true;
      this.res.writeHead(200, { 'content-type': 'text/event-stream' });
    }
    this.res.write(`${JSON.stringify(part)}\n`);
  }

  openEmpty(): void {
    this.started = true;
    this.res.writeHead(200, { 'content-type': 'text/event-stream' });
  }

  async close(): Promise<void> {
    this.res.end();
  }

  async fail(error: GatewayError): Promise<void> {
    this.res.write(`error: ${error.kind}\n`);
  }
}
