import { type } from "arktype";
import { path, port } from "./parse";
import { setting, type Topic } from "./setting";

/** The shortest `ADMIN_TOKEN` taken: whoever holds it may erase persons, so it must not be guessable. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/**
 * The admin door: a listener of its own, on loopback only, for what an operator asks of the running service
 * (`ingest forget`, `ingest backup`; src/http/admin.ts, docs/operations.md). Off unless both are set.
 */
export const ADMIN = {
  adminPort: setting<number | undefined>({
    env: "ADMIN_PORT",
    parse: port,
    default: undefined,
    shownDefault: "off",
    help: "Serve `POST /admin/forget` and `/admin/backup` (`ingest forget`, `ingest backup` through the running service) on this port, on 127.0.0.1 only; needs `ADMIN_TOKEN`.",
    backend: "any",
  }),
  adminToken: setting({
    env: "ADMIN_TOKEN",
    parse: type(`string >= ${MIN_ADMIN_TOKEN_LENGTH}`),
    default: "",
    shownDefault: "none",
    help: `The bearer token the admin port requires, at least ${MIN_ADMIN_TOKEN_LENGTH} characters; \`ingest forget\` and \`ingest backup\` send the same.`,
    backend: "any",
    redact: "omit",
  }),
  backupDir: setting<string | undefined>({
    env: "BACKUP_DIR",
    parse: path,
    default: undefined,
    shownDefault: "none",
    help: "The directory `ingest backup` through the admin door writes backups in (each one a directory directly in it); the engine may write backups nowhere else.",
    backend: "embedded",
    refusedElsewhere:
      "BACKUP_DIR is for the embedded engine; with CLICKHOUSE_URL back up with the server's own BACKUP (docs/operations.md#backup-and-restore)",
  }),
} as const satisfies Topic;
