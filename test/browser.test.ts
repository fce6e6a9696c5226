import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import puppeteer, { type Browser } from "puppeteer-core";
import { personIdFor } from "../src/identity";
import { events, links, personOf } from "./helpers/rows";
import { startService, type TestService } from "./helpers/service";

// posthog-js (from npm) in a real Chromium (Debian's, driven by puppeteer-core without a browser download),
// on a page served from an allowed origin, against the service over real CORS.

const CHROMIUM = "/usr/bin/chromium";
const KEY = "phc_browser_key";

/** Chromium, installed if missing and possible (root, Debian's package), or why the test is skipped. */
function chromium(): string | { skipped: string } {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  if (process.getuid?.() !== 0) return { skipped: `${CHROMIUM} is missing and installing it needs root` };
  const install = (args: string[]) =>
    Bun.spawnSync(["apt-get", ...args], { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  if (install(["install", "-y", "chromium"]).exitCode !== 0) install(["update"]);
  if (!existsSync(CHROMIUM) && install(["install", "-y", "chromium"]).exitCode !== 0) {
    return { skipped: "apt-get install -y chromium failed" };
  }
  return existsSync(CHROMIUM) ? CHROMIUM : { skipped: `${CHROMIUM} is still missing after apt-get install` };
}

const executable = chromium();
if (typeof executable !== "string") console.log(`browser: skipped: ${executable.skipped}`);

let service: TestService;
let allowedPage: Server<undefined>;
let otherPage: Server<undefined>;
let browser: Browser;
let profile: string;

/** A page server: `/` is a blank HTML page, `/posthog.js` the npm package's browser bundle. */
function pageServer(): Server<undefined> {
  const bundle = Bun.file(join(import.meta.dir, "..", "node_modules", "posthog-js", "dist", "array.full.js"));
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) =>
      new URL(request.url).pathname === "/posthog.js"
        ? new Response(bundle, { headers: { "content-type": "text/javascript" } })
        : new Response('<!doctype html><html><head><script src="/posthog.js"></script></head><body></body></html>', {
            headers: { "content-type": "text/html" },
          }),
  });
}

beforeAll(async () => {
  if (typeof executable !== "string") return;
  allowedPage = pageServer();
  otherPage = pageServer();
  const origin = allowedPage.url.origin;
  // posthog-js always sends its project token as api_key, and a key a browser sends must be valid (docs/behaviour.md#authentication)
  service = await startService({ ALLOWED_ORIGINS: origin, PUBLIC_API_KEYS: KEY });
  profile = mkdtempSync(join(tmpdir(), "ingest-chromium-"));
  browser = await puppeteer.launch({
    executablePath: executable,
    userDataDir: profile,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}, 60_000);

afterAll(async () => {
  if (typeof executable !== "string") return;
  await browser?.close();
  await allowedPage?.stop(true);
  await otherPage?.stop(true);
  await service?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await Bun.sleep(100);
    value = await read();
  }
  return value;
}

test.skipIf(typeof executable !== "string")(
  "posthog-js on an allowed origin: capture, identify with $set, alias and reset all land",
  async () => {
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on("request", (request) => {
      if (request.url().startsWith(service.url))
        requests.push(`${request.method()} ${new URL(request.url()).pathname}`);
    });
    await page.goto(allowedPage.url.href);
    const ids = await page.evaluate(
      async (key: string, apiHost: string) => {
        // biome-ignore lint/suspicious/noExplicitAny: the bundle's global
        const posthog = (globalThis as any).posthog;
        posthog.init(key, {
          api_host: apiHost,
          disable_compression: true,
          disable_beacon: true,
          rewriteRequestPath: (url: URL) => {
            if (url.pathname.startsWith("/e")) url.pathname = "/batch/";
            return url;
          },
          advanced_disable_flags: true,
          advanced_disable_decide: true,
          advanced_disable_feature_flags: true,
          opt_out_useragent_filter: true,
          autocapture: false,
          capture_pageview: false,
          capture_pageleave: false,
          disable_session_recording: true,
          disable_surveys: true,
          persistence: "memory",
          request_queue_config: { flush_interval_ms: 250 },
        });
        const anonymous = posthog.get_distinct_id();
        posthog.capture("clicked", { button: "buy" });
        posthog.identify("browser-user", { email: "ada@example.com" });
        posthog.alias("browser-alias");
        posthog.reset();
        const afterReset = posthog.get_distinct_id();
        posthog.capture("after_reset");
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        return { anonymous, afterReset };
      },
      KEY,
      service.url,
    );

    const stored = await until(
      () => events(service.db),
      (rows) => rows.length >= 4,
    );
    const byName = Object.fromEntries(stored.map((e) => [e.event, e]));
    expect(Object.keys(byName).sort()).toEqual(["$create_alias", "$identify", "after_reset", "clicked"]);
    expect(requests.some((r) => r === "POST /batch/")).toBe(true);

    // the anonymous ID came inside properties; identify linked it and set the person properties (event-level $set)
    expect(byName.clicked?.distinct_id).toBe(ids.anonymous);
    expect(byName.clicked?.current_url).toBe(allowedPage.url.href); // posthog-js adds $current_url
    const person = await personOf(service.db, "browser-user");
    // email from identify's event-level $set; posthog-js's own $set_once of initial page properties too
    expect(person?.properties).toMatchObject({ email: "ada@example.com", $initial_pathname: "/" });
    expect(person?.is_identified).toBe(1);
    const stored_links = await links(service.db);
    expect(stored_links.get(ids.anonymous)?.person_id).toBe(person?.id);
    expect(stored_links.get("browser-alias")?.person_id).toBe(person?.id);
    // posthog-js's default person_profiles, 'identified_only': anonymous events are personless, so the identified
    // user's person is the one that survives, and the anonymous click resolves to it
    expect(JSON.parse(byName.clicked!.properties).$process_person_profile).toBe(false);
    expect(person?.id).toBe(personIdFor("browser-user"));
    const [resolved] = await service.db.rows<{ person_id: string }>(
      `SELECT toString(person_id) AS person_id FROM ${service.db.table("events_resolved")} WHERE event = 'clicked'`,
    );
    expect(resolved?.person_id).toBe(person!.id);
    // after reset, a new anonymous ID: personless again, on the person a first profile would make, with no row
    expect(byName.after_reset?.distinct_id).toBe(ids.afterReset);
    expect(ids.afterReset).not.toBe(ids.anonymous);
    expect(byName.after_reset?.person_id).toBe(personIdFor(ids.afterReset));
    expect(await personOf(service.db, ids.afterReset)).toBeUndefined();
    await page.close();
  },
  60_000,
);

test.skipIf(typeof executable !== "string")(
  "a plain fetch from a disallowed origin's page is blocked by the browser, and stores nothing",
  async () => {
    const page = await browser.newPage();
    await page.goto(otherPage.url.href);
    const before = (await events(service.db)).length;
    const outcome = await page.evaluate(async (url: string) => {
      try {
        const response = await fetch(`${url}/batch/`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ batch: [{ event: "from_elsewhere", distinct_id: "intruder" }] }),
        });
        return `answered ${response.status}`;
      } catch (error) {
        return `blocked: ${(error as Error).name}`;
      }
    }, service.url);
    expect(outcome).toBe("blocked: TypeError");
    await Bun.sleep(300);
    expect((await events(service.db)).length).toBe(before);
    await page.close();
  },
  30_000,
);

test.skipIf(typeof executable !== "string")(
  "a plain fetch with keepalive from an allowed origin (the README's snippet) is stored",
  async () => {
    const page = await browser.newPage();
    await page.goto(allowedPage.url.href);
    const status = await page.evaluate(
      async (url: string, key: string) => {
        // README "Sending events": plain fetch
        const response = await fetch(`${url}/batch/`, {
          method: "POST",
          keepalive: true,
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ api_key: key, batch: [{ event: "signed_up", distinct_id: "fetch-user" }] }),
        });
        return response.status;
      },
      service.url,
      KEY,
    );
    expect(status).toBe(200);
    expect((await events(service.db)).filter((e) => e.distinct_id === "fetch-user").map((e) => e.event)).toEqual([
      "signed_up",
    ]);
    await page.close();
  },
  30_000,
);
