// `sluice doctor`: runs the checks and prints them; exit status 1 when one failed.
import { resolveRedis, resolveSettings } from '../core/settings.js';
import { redisOption, type ConfigFlags, type JsonFlag, type SluiceCommand, type StoreFlags } from './command.js';

export function addDoctorCommand(program: SluiceCommand): void {
  program
    .command('doctor')
    .description('check the configuration, the store, the secrets, each provider (one model listing), each MCP server (connect, list tools) and Redis; exit status 1 when a check failed')
    .withStoreFlags()
    .withConfigFlag()
    // No --redis-prefix: a PING touches no key.
    .addOption(redisOption('checked with a PING'))
    .option('--json', 'print one JSON document')
    .action(async (opts: StoreFlags & ConfigFlags & { redis?: string } & JsonFlag) => {
      const settings = resolveSettings(opts);
      const { redisUrl } = resolveRedis(opts);
      const { runDoctor, formatChecks } = await import('../doctor/doctor.js');
      const checks = await runDoctor({ ...settings, redisUrl });
      const ok = checks.every((c) => c.status !== 'fail');
      console.log(opts.json ? JSON.stringify({ ok, checks }, null, 2) : formatChecks(checks));
      if (!ok) process.exitCode = 1;
    });
}
