import { GatewayError } from '../../core/errors.js';
import { isObject } from '../json.js';
import type { RelayFormat } from '../relay-format.js';

type Event = Readonly<Record<string, unknown>>;

/** A chat or legacy completion: content once a choice has any, or finished. */
function choicesHaveContent(event: Event, hasContent: (choice: Event) => boolean): boolean {
  if (!Array.isArray(event.choices)) return false;
  for (const choice of event.choices) {
    if (!isObject(choice)) continue;
    if ((choice.finish_reason !== undefined && choice.finish_reason !== null) || hasContent(choice)) return true;
  }
  return false;
}

/** A chat delta with anything beyond its role: text, a refusal, reasoning, tool calls. */
function deltaHasContent(delta: unknown): boolean {
  if (!isObject(delta)) return false;
  for (const key in delta) {
    if (key === 'role') continue;
    const value = delta[key];
    if (typeof value === 'string' ? value !== '' : Array.isArray(value) ? value.length > 0 : value !== null && value !== undefined) return true;
  }
  return false;
}

export const OPENAI_CHAT: RelayFormat = {
  isContent: (event) => choicesHaveContent(event, (choice) => deltaHasContent(choice.delta)),
  wholeProblem: (body) => (Array.isArray(body.choices) ? undefined : 'an answer without choices'),
};

export const OPENAI_COMPLETIONS: RelayFormat = {
  isContent: (event) => choicesHaveContent(event, (choice) => typeof choice.text === 'string' && choice.text !== ''),
  wholeProblem: (body) => (Array.isArray(body.choices) ? undefined : 'an answer without choices'),
};

/** A moderation: whole, never streamed, one result per input. */
export const OPENAI_MODERATIONS: RelayFormat = {
  isContent: () => true,
  wholeProblem: (body) => (Array.isArray(body.results) ? undefined : 'a moderation without results'),
};

/** Images made, whole (a stream of partial images is not relayed): each item of `data` is a `b64_json` or a `url`. */
export const OPENAI_IMAGES: RelayFormat = {
  isContent: () => true,
  wholeProblem: (body) => {
    if (!Array.isArray(body.data)) return 'an image answer without data';
    for (const item of body.data as unknown[]) {
      if (!isObject(item) || (typeof item.b64_json !== 'string' && typeof item.url !== 'string')) return 'an image without b64_json or url';
    }
    return undefined;
  },
};

export const OPENAI_RESPONSES: RelayFormat = {
  // `response.created`, `.in_progress` and an item's announcement come first; any delta, done or end is content.
  isContent: (event) => {
    const type = typeof event.type === 'string' ? event.type : '';
    return type.endsWith('.delta') || type.endsWith('.done') || type === 'response.completed' || type === 'response.incomplete';
  },
  failureIn: (event, providerId) =>
    event.type === 'response.failed' || event.type === 'error'
      ? // Its own words stay out: only the adapters know the secrets to redact from them.
        new GatewayError('upstream_error', `The upstream provider '${providerId}' failed before its answer began.`, { upstreamFailure: 500 })
      : undefined,
  wholeProblem: (body) => (Array.isArray(body.output) ? undefined : 'a response without output'),
};
