// `sluice serve`: its flags and the environment variables behind them, turned into the gateway's settings.
import { availableParallelism } from 'node:os';
import { Option } from 'commander';
import { envSetting, parseListen, resolveRedis, resolveSettings } from '../core/settings.js';
import { UserError } from '../core/user-error.js';
import type { PortSharing } from '../wiring/gateway.js';
import { serve } from '../wiring/serve.js';
import { positiveInt, type ConfigFlags, type RedisFlags, type SluiceCommand, type StoreFlags } from './command.js';

const PORT_SHARING: readonly PortSharing[] = ['reuseport', 'handoff'];

function portSharingSetting(value: string | undefined): PortSharing {
  if (value === undefined) return 'reuseport';
  if ((PORT_SHARING as readonly string[]).includes(value)) return value as PortSharing;
  throw new UserError(`SLUICE_PORT_SHARING must be ${PORT_SHARING.join(' or ')}, not '${value.slice(0, 40)}'.`);
}

interface ServeFlags extends StoreFlags, ConfigFlags, RedisFlags {
  listen?: string;
  drainTimeout: number;
  maxBodyBytes: number;
  workers?: number;
  portSharing?: PortSharing;
  sessionTtl: number;
  sessionIdle: number;
  metricsToken?: string;
  metricsListen?: string;
  accessLog: boolean;
}

export function addServeCommand(program: SluiceCommand): void {
  program
    .command('serve')
    .description('run the gateway')
    .option('--listen <host:port>', 'address to listen on (env SLUICE_LISTEN, default 127.0.0.1:8080)')
    .withStoreFlags()
    .withConfigFlag()
    .addOption(new Option('--drain-timeout <ms>', 'how long a graceful stop waits for requests in flight').argParser(positiveInt).default(30_000))
    .addOption(new Option('--max-body-bytes <n>', 'largest request body accepted').argParser(positiveInt).default(32 * 1024 * 1024))
    .addOption(new Option('--workers <n>', 'processes serving requests (env SLUICE_WORKERS, default: the number of cores)').argParser(positiveInt))
    .addOption(new Option('--port-sharing <how>', "how workers share the port: reuseport, each its own socket and the kernel spreading connections (falls back to handoff where the platform cannot), or handoff, node:cluster's primary accepting and passing each connection on (env SLUICE_PORT_SHARING, default reuseport)").choices(PORT_SHARING))
    .addOption(new Option('--session-ttl <ms>', 'how long a console sign-in lasts').argParser(positiveInt).default(12 * 3_600_000))
    .addOption(new Option('--session-idle <ms>', 'a console sign-in also ends after this long without activity').argParser(positiveInt).default(2 * 3_600_000))
    .withRedisFlags('limit counters shared by every replica, and changes reaching every gateway process at once (without it: this machine\'s counters; changes polled every 250 ms)')
    .option('--metrics-token <token>', 'serve /metrics on the gateway port to a bearer of this token (env SLUICE_METRICS_TOKEN, which keeps it out of the process list)')
    .option('--metrics-listen <host:port>', 'serve /metrics without a token on a port of its own (env SLUICE_METRICS_LISTEN)')
    .option('--no-access-log', 'no JSON line per request on the log (env SLUICE_ACCESS_LOG=off)')
    .action(async (opts: ServeFlags) => {
      const { host, port } = parseListen(opts.listen ?? envSetting('SLUICE_LISTEN') ?? '127.0.0.1:8080');
      const metricsListen = opts.metricsListen ?? envSetting('SLUICE_METRICS_LISTEN');
      const metricsToken = opts.metricsToken ?? envSetting('SLUICE_METRICS_TOKEN');
      if (metricsToken !== undefined && metricsToken.trim().length < 16) throw new UserError('The metrics token must be at least 16 characters.');
      const workersVariable = envSetting('SLUICE_WORKERS');
      const workers = opts.workers ?? (workersVariable !== undefined ? positiveInt(workersVariable) : availableParallelism());
      const portSharing = opts.portSharing ?? portSharingSetting(envSetting('SLUICE_PORT_SHARING'));
      await serve({
        ...resolveSettings(opts),
        ...resolveRedis(opts),
        host,
        port,
        maxBodyBytes: opts.maxBodyBytes,
        drainTimeoutMs: opts.drainTimeout,
        workers,
        portSharing,
        sessionTtlMs: opts.sessionTtl,
        sessionIdleMs: opts.sessionIdle,
        metricsToken: metricsToken?.trim(),
        metricsListen: metricsListen === undefined || metricsListen === '' ? undefined : parseListen(metricsListen, '--metrics-listen'),
        accessLog: opts.accessLog && envSetting('SLUICE_ACCESS_LOG') !== 'off',
      });
    });
}
