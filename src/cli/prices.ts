// `sluice prices`: import, show and reset the price list that prices catalogue entries without their own pricing.
import { resolveRedis } from '../core/settings.js';
import type { JsonFlag, RedisFlags, SluiceCommand, StoreFlags } from './command.js';
import { printTable } from './table.js';
import { withStore } from './with-store.js';

/** The units besides tokens, which `prices show` puts in one column. */
const OTHER_UNITS = ['per_image', 'per_audio_minute', 'per_mchar', 'per_request'] as const;

export function addPricesCommands(program: SluiceCommand): void {
  const prices = program.command('prices').description('the price list that prices catalogue entries without their own pricing');

  prices
    .command('import')
    .description('validate a price list file (the shipped list\'s JSON format) and put it in force in every running gateway; no network needed')
    .argument('<file>', 'the JSON price list')
    .withStoreFlags()
    .withRedisFlags('running gateways reprice at once')
    .action(async (file: string, opts: StoreFlags & RedisFlags) => {
      const { importPriceList } = await import('../pricing/price-list-admin.js');
      const list = await withStore(opts, (store) => importPriceList(store, file), resolveRedis(opts));
      console.log(`Imported the price list as of ${list.asOf} (${list.document.models.length} models); it is in force.`);
    });

  prices
    .command('show')
    .description('which price list is in force, its date and its prices')
    .option('--json', 'print one JSON object')
    .withStoreFlags()
    .action(async (opts: StoreFlags & JsonFlag) => {
      const { priceListStatus } = await import('../pricing/price-list-admin.js');
      const { inForce, shipped, imported } = await withStore(opts, priceListStatus);
      const models = inForce.list.document.models;
      if (opts.json) {
        return console.log(
          JSON.stringify({
            in_force: { origin: inForce.origin, as_of: inForce.list.asOf },
            shipped: { as_of: shipped.asOf },
            imported: imported === undefined ? null : { as_of: imported.list.asOf, imported_at: new Date(imported.importedAt).toISOString() },
            models,
          }),
        );
      }
      console.log(`In force: the ${inForce.origin} price list as of ${inForce.list.asOf} (${models.length} models).`);
      console.log(`Shipped with Sluice: as of ${shipped.asOf}. Imported: ${imported === undefined ? 'none' : `as of ${imported.list.asOf}, on ${new Date(imported.importedAt).toISOString()}`}.`);
      const usd = (n: number | undefined) => (n === undefined ? '-' : String(n));
      // Prices besides tokens, by their field name: `per_image=0.04`.
      const others = (m: (typeof models)[number]) => OTHER_UNITS.filter((unit) => m[unit] !== undefined).map((unit) => `${unit}=${m[unit]}`).join(' ') || '-';
      printTable(
        ['FAMILY', 'MODEL', 'INPUT', 'OUTPUT', 'CACHED INPUT', 'CACHE WRITE', 'OTHER'],
        models.map((m) => [m.family, [m.model, ...(m.aliases ?? [])].join(', '), usd(m.input_per_mtok), usd(m.output_per_mtok), usd(m.cached_input_per_mtok), usd(m.cache_write_per_mtok), others(m)]),
        5,
      );
    });

  prices
    .command('reset')
    .description('drop the imported price list: the shipped one is in force again')
    .withStoreFlags()
    .withRedisFlags('running gateways reprice at once')
    .action(async (opts: StoreFlags & RedisFlags) => {
      const [{ resetPriceList }, { shippedPriceList }] = await Promise.all([import('../pricing/price-list-admin.js'), import('../pricing/price-list.js')]);
      const removed = await withStore(opts, (store) => resetPriceList(store), resolveRedis(opts));
      console.log(`${removed ? 'Removed the imported price list' : 'No price list was imported'}; the shipped list as of ${shippedPriceList().asOf} is in force.`);
    });
}
