import { failed, refuse } from "./backup-common";

/** Where `ingest backup` asks a running service: an admin door, and whether it was asked for (then only it). */
export interface Door {
  readonly url: string;
  readonly explicit: boolean;
}

/** The door `--url`, ADMIN_URL or ADMIN_PORT names, as `ingest forget` finds it; none when none is set. */
export function doorOf(url: string | undefined, env: NodeJS.ProcessEnv): Door | undefined {
  const explicit = url ?? env.ADMIN_URL;
  if (explicit) return { url: explicit, explicit: true };
  return env.ADMIN_PORT ? { url: `http://127.0.0.1:${env.ADMIN_PORT}`, explicit: false } : undefined;
}

/**
 * Asks the service's admin door to back up into `dest` (on `base`), both absolute, and prints its summary. The
 * door answers once the backup is made: nothing is shown meanwhile. Undefined when nothing answers at a door that
 * was only assumed (ADMIN_PORT), so that the data directory is tried instead.
 */
export async function backupThroughDoor(
  door: Door,
  dest: string,
  base: string | undefined,
  token: string,
): Promise<number | undefined> {
  if (token === "") {
    return refuse(
      "backup",
      "ADMIN_TOKEN is not set: the admin door needs the service's token (see ingest backup --help)",
    );
  }
  let response: Response;
  try {
    response = await fetch(new URL("/admin/backup", door.url), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ dest, base: base ?? null }),
    });
  } catch (error) {
    if (!door.explicit) return undefined;
    return failed("backup", `cannot reach the admin door at ${door.url}: ${(error as Error).message}`);
  }
  const body = (await response.json().catch(() => ({}))) as { status?: unknown; error?: string };
  if (response.ok) {
    const { status: _status, ...summary } = body;
    process.stdout.write(`${JSON.stringify({ ...summary, via: "service" })}\n`);
    return 0;
  }
  if (response.status === 401) return refuse("backup", `the service at ${door.url} refused ADMIN_TOKEN`);
  const sentence = (body.error ?? `the admin door answered ${response.status}`).replace(/\.$/, "");
  // refused with nothing made: no BACKUP_DIR, a destination it cannot use, a backup under way
  if (response.status < 500) return refuse("backup", sentence);
  return failed("backup", sentence);
}
