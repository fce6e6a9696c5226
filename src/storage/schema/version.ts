/**
 * The version of the schema `tables.ts` declares: raised by one with every change to a table, the views or their
 * definitions (test/storage/schema-version.test.ts pins each version's statements and fails until it is raised).
 * A backup records it, and a version of the service refuses to restore a backup whose schema is newer than its own:
 * an older schema is brought up to date at startup as any older database is, a newer one may hold what this version
 * cannot read.
 */
export const SCHEMA_VERSION = 10;
