// `sluice init`: writes a commented configuration file for the providers named.
import { Option } from 'commander';
import { DEFAULT_CONFIG_FILE, envSetting } from '../core/settings.js';
import { UserError } from '../core/user-error.js';
import type { ConfigFlags, SluiceCommand } from './command.js';

export function addInitCommand(program: SluiceCommand): void {
  program
    .command('init')
    .description('write a commented configuration file for the providers named (credentials stay in environment variables)')
    .addOption(
      new Option('--provider <kind[=base_url]>', 'openai=http://127.0.0.1:8000/v1 (a self-hosted OpenAI-compatible server), openai, anthropic, gemini, azure=https://RESOURCE.openai.azure.com, bedrock[=REGION] or vertex[=PROJECT[/LOCATION]]; repeat for more').argParser(
        (value: string, previous: string[] = []) => [...previous, value],
      ),
    )
    .withConfigFlag()
    .option('--force', 'replace an existing file')
    .action(async (opts: { provider?: string[]; force?: boolean } & ConfigFlags) => {
      const { writeFileSync } = await import('node:fs');
      const { checkInitConfig, parseInitProviders, renderInitConfig } = await import('../config/init-config.js');
      const providers = parseInitProviders(opts.provider ?? []);
      const text = renderInitConfig(providers);
      checkInitConfig(text, providers);
      const path = opts.config ?? envSetting('SLUICE_CONFIG') ?? DEFAULT_CONFIG_FILE;
      try {
        writeFileSync(path, text, { flag: opts.force ? 'w' : 'wx', mode: 0o644 });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        throw new UserError(code === 'EEXIST' ? `${path} exists already; pass --force to replace it` : `cannot write ${path} (${code ?? String(error)})`);
      }
      console.log(`Wrote ${path} with ${providers.map((p) => `${p.id} (${p.kind})`).join(', ')}.`);
      console.log('Next:');
      const named = new Set<string>();
      for (const p of providers) {
        // Two providers of a kind may read one variable (AWS's, Google's): it is named once.
        for (const variable of p.variables.filter((v) => !named.has(v.name) && named.add(v.name))) console.log(`  export ${variable.name}=…${variable.note === undefined ? '' : `   (${variable.note})`}${variable.optional && p.kind === 'openai' ? '   (only if the server wants a key)' : ''}`);
      }
      const configFlag = opts.config === undefined ? '' : ` --config ${path}`;
      console.log(`  sluice doctor${configFlag}     checks the file, the store and each provider`);
      console.log(`  sluice serve${configFlag}      (a running gateway reads the file again by itself)`);
    });
}
