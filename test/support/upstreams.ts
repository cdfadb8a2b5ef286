import { startFakeAnthropic } from '../fakes/fake-anthropic.js';
import { startFakeGemini } from '../fakes/fake-gemini.js';
import { startFakeOpenAI } from '../fakes/fake-openai-upstream.js';
import type { FakeUpstream } from '../fakes/fake-server.js';

/** One fake upstream of each provider kind, and the `providers:` YAML that names them. */
export interface ThreeUpstreams {
  readonly anthropic: FakeUpstream;
  readonly gemini: FakeUpstream;
  readonly vllm: FakeUpstream;
  /** Providers `anthropic`, `google` and `vllm`, with their credentials. */
  readonly providersYaml: string;
  reset(): void;
  close(): Promise<void>;
}

export async function startThreeUpstreams(): Promise<ThreeUpstreams> {
  const [anthropic, gemini, vllm] = await Promise.all([
    startFakeAnthropic({ apiKey: 'anthropic-credential' }),
    startFakeGemini({ apiKey: 'gemini-credential' }),
    startFakeOpenAI({ apiKey: 'vllm-credential' }),
  ]);
  return {
    anthropic,
    gemini,
    vllm,
    providersYaml: `
providers:
  - { id: anthropic, kind: anthropic, base_url: '${anthropic.url}', api_key: anthropic-credential }
  - { id: google, kind: gemini, base_url: '${gemini.url}', api_key: gemini-credential }
  - { id: vllm, kind: openai, base_url: '${vllm.url}', api_key: vllm-credential }
`,
    reset() {
      for (const fake of [anthropic, gemini, vllm]) {
        fake.behaviour = {};
        fake.requests.length = 0;
      }
    },
    close: async () => {
      await Promise.all([anthropic.close(), gemini.close(), vllm.close()]);
    },
  };
}
