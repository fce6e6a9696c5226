/**
 * `bun bench/record.ts`: records what the real SDKs send, into bench/traffic/recorded.json, the templates of the
 * `web` load (bench/traffic/web.ts). Run by hand when an SDK is upgraded; never part of a bench run.
 *
 * posthog-js (the npm package's browser bundle, as test/browser.test.ts loads it) runs with its defaults in
 * Debian's Chromium on a small site, `http://app.example.com`, that this script serves, and posts to
 * `http://t.example.com` (Chromium resolves both names to this script's server: no network). The site answers
 * posthog-js's remote config as PostHog does for a project with autocapture on and recordings, surveys and flags
 * off (so `$elements_chain` comes without `$elements`, as PostHog Cloud sends it). A desktop visitor lands from a
 * search ad (utm_* and gclid) and clicks around anonymously, logs in (`identify` with `$set`), keeps clicking,
 * sets a person property (`setPersonProperties`: a `$set` event) and captures custom events; a phone visitor lands
 * from a social link and signs up; another desktop visitor comes straight to a page (no referrer, no campaign), and
 * so does one with each other browser of bench/traffic/devices.ts. Then posthog-node sends server events (`capture`, `identify`) to the same server.
 * Every request body is decoded (gzip, base64 form data, or JSON) and kept whole: the events as sent.
 *
 * What is of the recording rather than of real traffic: the site is plain http (so referrers are http too: a
 * browser drops an https referrer on the way to an http page), the clock and time zone are this machine's, and
 * headless Chromium's window is at least 500 px wide (the phone's `$viewport_width`). The `web` load replaces
 * the page, device and time keys with its own values anyway.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PostHog } from "posthog-node";
import puppeteer, { type Page } from "puppeteer-core";
import { ROOT } from "./harness";
import { DEVICES, type Device, deviceNamed } from "./traffic/devices";
import { RECORDING, type RecordedRequest, type Recording } from "./traffic/recorded";

const CHROMIUM = "/usr/bin/chromium";
const SITE = "app.example.com";
const CAPTURE = "t.example.com";
const TOKEN = "phc_bench_recording";
/** posthog-js flushes its queue every 3 s; a step waits until nothing new arrived for longer than that. */
const QUIET_MS = 4000;

/** The visitors' browsers (bench/traffic/devices.ts): the one who logs in, and the phone. */
const DESKTOP = deviceNamed("mac-chrome");
const PHONE = deviceNamed("iphone-safari");

/** The remote config PostHog serves for such a project (`/array/<token>/config`): the keys posthog-js reads. */
const REMOTE_CONFIG = {
  token: TOKEN,
  supportedCompression: ["gzip", "gzip-js"],
  hasFeatureFlags: false,
  captureDeadClicks: false,
  capturePerformance: false,
  autocapture_opt_out: false,
  autocaptureExceptions: false,
  elementsChainAsString: true,
  sessionRecording: false,
  heatmaps: false,
  surveys: false,
  defaultIdentifiedOnly: true,
  siteApps: [],
};

const NO_FLAGS = { featureFlags: {}, featureFlagPayloads: {}, errorsWhileComputingFlags: false, flags: {} };

/** The site's pages: a nav bar of links, and each page's own buttons. */
const PAGES: Readonly<Record<string, string>> = {
  "/": '<h1>Analytics for builders</h1><button id="start-trial" class="btn btn-primary">Start free trial</button>',
  "/pricing":
    '<h1>Pricing</h1><div class="plan"><button class="btn choose-plan" data-plan="pro">Choose Pro</button></div>',
  "/login":
    '<form onsubmit="return false"><input name="email"><button class="btn" type="submit">Log in</button></form>',
  "/dashboard":
    '<h1>Dashboard</h1><div class="toolbar"><button id="export" class="btn btn-secondary">Export CSV</button></div>',
  "/projects/42/insights": '<h1>Insights</h1><a class="tab" href="/projects/42/insights?tab=funnels">Funnels</a>',
  "/blog/how-we-built-it": "<article><h1>How we built it</h1><p>Long read.</p></article>",
  "/signup":
    '<form onsubmit="return false"><button class="btn btn-primary" type="submit">Create account</button></form>',
};

function page(path: string): string {
  const nav = ["/", "/pricing", "/login", "/dashboard", "/projects/42/insights?tab=trends", "/signup"]
    .map((href) => `<a class="nav-link" href="${href}">${href === "/" ? "Home" : href.split(/[/?]/)[1]}</a>`)
    .join(" ");
  const init = `posthog.init(${JSON.stringify(TOKEN)}, { api_host: "http://${CAPTURE}" })`;
  return `<!doctype html><html><head><title>${path}</title><script src="/static/posthog.js"></script><script>${init}</script></head><body><nav>${nav}</nav><main>${PAGES[path]}</main></body></html>`;
}

const CORS = {
  "access-control-allow-origin": `http://${SITE}`,
  "access-control-allow-credentials": "true",
  "access-control-allow-headers": "content-type",
  "access-control-allow-methods": "GET, POST, OPTIONS",
};

/** A request body's events, whichever way the SDK encoded it; and the body's other keys (api_key, sent_at, …). */
async function decode(request: Request, url: URL): Promise<Omit<RecordedRequest, "sdk">> {
  let bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = Bun.gunzipSync(bytes); // posthog-js gzip-js, posthog-node gzip
  let text = new TextDecoder().decode(bytes);
  if (text.startsWith("data=")) {
    text = decodeURIComponent(text.slice("data=".length).replace(/\+/g, " "));
    if (url.searchParams.get("compression") === "base64") text = Buffer.from(text, "base64").toString("utf8");
  }
  const body = JSON.parse(text) as unknown;
  const { batch, ...envelope } = Array.isArray(body) ? { batch: body } : (body as { batch?: unknown[] });
  return {
    path: url.pathname,
    query: url.search,
    contentType: request.headers.get("content-type") ?? "",
    contentEncoding: request.headers.get("content-encoding") ?? "",
    envelope,
    events: (batch ?? [body]) as Record<string, unknown>[],
  };
}

/** The site and the capture endpoint, by Host; every capture request recorded in `requests`, in order. */
function serve(requests: RecordedRequest[]) {
  const bundle = Bun.file(join(ROOT, "node_modules", "posthog-js", "dist", "array.full.js"));
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const host = request.headers.get("host")?.split(":")[0];
      if (host === SITE) {
        if (url.pathname === "/static/posthog.js")
          return new Response(bundle, { headers: { "content-type": "text/javascript" } });
        const html = PAGES[url.pathname] === undefined ? undefined : page(url.pathname);
        return new Response(html ?? "not found", {
          status: html ? 200 : 404,
          headers: { "content-type": "text/html" },
        });
      }
      if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: CORS });
      if (url.pathname === `/array/${TOKEN}/config`) return Response.json(REMOTE_CONFIG, { headers: CORS });
      // identify reloads flags whatever the config says: none
      if (url.pathname === "/flags/") return Response.json(NO_FLAGS, { headers: CORS });
      if (request.method !== "POST") return new Response("not found", { status: 404, headers: CORS });
      const sdk = request.headers.get("user-agent")?.startsWith("posthog-node") ? "posthog-node" : "posthog-js";
      requests.push({ sdk, ...(await decode(request, url)) });
      return Response.json({ status: "Ok" }, { headers: CORS });
    },
  });
}

/** Waits until no request has arrived for QUIET_MS. */
async function quiet(requests: readonly unknown[]): Promise<void> {
  for (let seen = -1; seen !== requests.length; ) {
    seen = requests.length;
    await Bun.sleep(QUIET_MS);
  }
}

/** Clicks `selector`, and when it is a link waits for the page it opens. */
async function click(tab: Page, selector: string, navigates = false): Promise<void> {
  await Promise.all([navigates ? tab.waitForNavigation() : Promise.resolve(), tab.click(selector)]);
}

/**
 * Chromium as `device`, its names resolved to `port`, with one page; closed after `visit`. The user agent and
 * sizes are launch flags, not puppeteer's per-page emulation, which a page loses while it unloads (its
 * `$pageleave` then came from HeadlessChrome, a bot to posthog-js, which dropped it).
 */
async function withBrowser(device: Device, port: number, visit: (tab: Page) => Promise<void>): Promise<void> {
  const profile = mkdtempSync(join(tmpdir(), "bench-record-"));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    userDataDir: profile,
    defaultViewport: null,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      `--user-agent=${device.userAgent}`,
      `--window-size=${device.viewport.join(",")}`,
      // in device pixels
      `--screen-info={${device.screen.map((side) => side * device.scale).join("x")} devicePixelRatio=${device.scale}}`,
      `--force-device-scale-factor=${device.scale}`,
      // navigator.webdriver would make posthog-js take the browser for a bot and drop its events
      "--disable-blink-features=AutomationControlled",
      `--host-resolver-rules=MAP ${SITE} 127.0.0.1:${port}, MAP ${CAPTURE} 127.0.0.1:${port}`,
    ],
  });
  try {
    const [tab] = await browser.pages();
    await visit(tab ?? (await browser.newPage()));
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

/** The desktop visitor: lands from an ad, browses anonymously, logs in, browses as the user, leaves. */
async function desktopVisit(tab: Page, requests: readonly unknown[]): Promise<void> {
  const landing = `http://${SITE}/?utm_source=google&utm_medium=cpc&utm_campaign=brand_search&utm_term=product+analytics&gclid=Cj0KCQiA-bench`;
  await tab.goto(landing, { referer: "http://www.google.com/" });
  await click(tab, "#start-trial");
  await click(tab, 'a[href="/pricing"]', true);
  await click(tab, "button.choose-plan");
  await tab.evaluate(() => {
    // biome-ignore lint/suspicious/noExplicitAny: the bundle's global
    (globalThis as any).posthog.capture("clicked_plan", { plan: "pro", billing: "annual", seats: 5 });
  });
  await click(tab, 'a[href="/login"]', true);
  await click(tab, 'button[type="submit"]');
  await tab.evaluate(() => {
    // biome-ignore lint/suspicious/noExplicitAny: the bundle's global
    (globalThis as any).posthog.identify("user_8f3a2c", { email: "ada@example.com", name: "Ada Lovelace" });
  });
  await quiet(requests);
  await click(tab, 'a[href="/dashboard"]', true);
  await click(tab, "#export");
  await tab.evaluate(() => {
    // biome-ignore lint/suspicious/noExplicitAny: the bundle's global
    const posthog = (globalThis as any).posthog;
    posthog.capture("exported_report", { format: "csv", rows: 120 });
    posthog.setPersonProperties({ plan: "pro", role: "admin" }, { signup_plan: "pro" });
  });
  await click(tab, 'a[href="/projects/42/insights?tab=trends"]', true);
  await click(tab, "a.tab", true);
  await tab.goto("about:blank"); // the last $pageleave
  await quiet(requests);
}

/**
 * The phone visitor: lands on a blog post from a social link (no utm_*), signs up (`identify`: a first touch
 * without a campaign), opens the dashboard, leaves.
 */
async function phoneVisit(tab: Page, requests: readonly unknown[]): Promise<void> {
  await tab.goto(`http://${SITE}/blog/how-we-built-it`, { referer: "http://t.co/" });
  await click(tab, 'a[href="/signup"]', true);
  await click(tab, 'button[type="submit"]');
  await tab.evaluate(() => {
    // biome-ignore lint/suspicious/noExplicitAny: the bundle's global
    (globalThis as any).posthog.identify("user_c41d07", { email: "grace@example.com", name: "Grace Hopper" });
  });
  await quiet(requests);
  await click(tab, 'a[href="/dashboard"]', true);
  await tab.goto("about:blank");
  await quiet(requests);
}

/** A direct visit (a typed address: no referrer, no campaign) to one page, anonymous; `click`s on it. */
async function directVisit(
  tab: Page,
  requests: readonly unknown[],
  path: string,
  clicks: string[] = [],
): Promise<void> {
  await tab.goto(`http://${SITE}${path}`);
  for (const selector of clicks) await click(tab, selector);
  await tab.goto("about:blank");
  await quiet(requests);
}

/** posthog-node as a backend uses it: events of the logged-in user, with properties, and an identify. */
async function serverEvents(url: string): Promise<void> {
  const client = new PostHog(TOKEN, { host: url, flushAt: 20, flushInterval: 0 });
  client.capture({
    distinctId: "user_8f3a2c",
    event: "subscription_started",
    properties: { plan: "pro", billing: "annual", amount: 490, currency: "USD" },
  });
  client.identify({ distinctId: "user_8f3a2c", properties: { plan: "pro", stripe_customer: "cus_Q1w2E3r4" } });
  client.capture({ distinctId: "user_8f3a2c", event: "invoice_paid", properties: { amount: 490, currency: "USD" } });
  await client.shutdown();
}

const version = (name: string): string =>
  (JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;

const requests: RecordedRequest[] = [];
const server = serve(requests);
try {
  const port = server.port!;
  await withBrowser(DESKTOP, port, (tab) => desktopVisit(tab, requests));
  await withBrowser(PHONE, port, (tab) => phoneVisit(tab, requests));
  await withBrowser(DESKTOP, port, (tab) => directVisit(tab, requests, "/pricing", ["button.choose-plan"]));
  // each other device once, for what posthog-js makes of its user agent
  for (const device of DEVICES.filter((d) => d !== DESKTOP && d !== PHONE)) {
    await withBrowser(device, port, (tab) => directVisit(tab, requests, "/"));
  }
  await serverEvents(`http://127.0.0.1:${port}`);
  const browser = Bun.spawnSync([CHROMIUM, "--version"]).stdout.toString().trim();
  const recording: Recording = {
    recorded: new Date().toISOString().slice(0, 10),
    sdks: { "posthog-js": version("posthog-js"), "posthog-node": version("posthog-node") },
    browser,
    requests,
  };
  writeFileSync(RECORDING, `${JSON.stringify(recording, null, 2)}\n`);
  const events = requests.flatMap((request) => request.events);
  console.log(`recorded ${events.length} events in ${requests.length} requests to ${RECORDING}`);
  for (const request of requests) {
    console.log(`  ${request.sdk} ${request.path}${request.query}: ${request.events.map((e) => e.event).join(", ")}`);
  }
} finally {
  await server.stop(true);
}
