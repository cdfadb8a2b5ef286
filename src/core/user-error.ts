/**
 * A mistake the person at the command line can fix (a bad configuration, an unknown key id): the
 * CLI prints its message alone and exits 1. Kept free of imports so that the CLI can recognise
 * one without loading the modules that throw it.
 */
export class UserError extends Error {
  override name = 'UserError';
}
