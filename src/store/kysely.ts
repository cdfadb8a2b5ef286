/**
 * Kysely's values, in one place: the query builder from 'kysely', the migrator from
 * 'kysely/migration' (where 0.29 moved it). Types come from 'kysely' directly.
 */
export { CompiledQuery, Kysely, PostgresDialect, SelectQueryNode, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, sql } from 'kysely';
export { Migrator } from 'kysely/migration';
