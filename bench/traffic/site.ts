/**
 * The site of the `web` load: an app on https://app.example.com with marketing pages that visitors read and app
 * pages that users work in, the referrers a session comes from, and the campaigns on a minority of landings.
 */
import type { random } from "../../test/helpers/identity-model";

export type Rng = ReturnType<typeof random>;

export const HOST = "app.example.com";

export interface Page {
  readonly url: string;
  readonly pathname: string;
  readonly title: string;
}

/** Where a session came from: its referrer (`$direct` for none) and the campaign in its landing URL, if any. */
export interface Touch {
  readonly page: Page;
  readonly referrer: string;
  readonly referringDomain: string;
  /** For a search engine's referrer, its name (`$search_engine`). */
  readonly searchEngine: string | undefined;
  /** The campaign parameters of the landing URL (`utm_source`, `gclid`, …), if it had any. */
  readonly campaign: Readonly<Record<string, string>> | undefined;
}

const DOCS = ["getting-started", "capture", "identify", "persons", "sessions", "insights", "api", "self-host"];
const POSTS = ["how-we-built-it", "funnels-101", "retention-curves", "pricing-changes", "q3-roadmap", "case-study"];
const FEATURES = ["analytics", "replay", "flags", "surveys"];
const TABS = ["trends", "funnels", "retention", "paths", "lifecycle"];
const RANGES = ["-24h", "-7d", "-30d", "-90d"];

function page(pathname: string, query = ""): Page {
  const title = pathname === "/" ? "Example – product analytics" : `${pathname.split("/").at(-1)} – Example`;
  return { url: `https://${HOST}${pathname}${query}`, pathname, title };
}

/** A marketing page, as visitors read them. */
export function marketingPage(rng: Rng): Page {
  const roll = rng.next();
  if (roll < 0.2) return page("/");
  if (roll < 0.35) return page("/pricing");
  if (roll < 0.45) return page(`/features/${rng.pick(FEATURES)}`);
  if (roll < 0.65) return page(`/blog/${rng.pick(POSTS)}`);
  if (roll < 0.85) return page(`/docs/${rng.pick(DOCS)}`, rng.next() < 0.2 ? `?q=${rng.pick(DOCS)}` : "");
  return page(rng.next() < 0.5 ? "/signup" : "/login");
}

/** An app page of a user's project, with its varying query string. */
export function appPage(rng: Rng, project: number): Page {
  const roll = rng.next();
  if (roll < 0.25) return page("/dashboard");
  if (roll < 0.55) {
    return page(`/project/${project}/insights/${rng.int(400)}`, `?tab=${rng.pick(TABS)}&date_from=${rng.pick(RANGES)}`);
  }
  if (roll < 0.75) return page(`/project/${project}/dashboards/${rng.int(40)}`);
  if (roll < 0.9) return page(`/project/${project}/events`, rng.next() < 0.5 ? `?q=${rng.pick(TABS)}` : "");
  return page(`/settings/${rng.pick(["billing", "team", "project"])}`);
}

interface Source {
  readonly share: number;
  readonly referrer: string;
  readonly searchEngine?: string;
}

/** Where sessions come from, by share (direct: a typed address, a bookmark, an app). */
const SOURCES: readonly Source[] = [
  { share: 0.4, referrer: "$direct" },
  { share: 0.24, referrer: "https://www.google.com/", searchEngine: "google" },
  { share: 0.04, referrer: "https://www.bing.com/", searchEngine: "bing" },
  { share: 0.02, referrer: "https://duckduckgo.com/", searchEngine: "duckduckgo" },
  { share: 0.06, referrer: "https://t.co/" },
  { share: 0.05, referrer: "https://www.linkedin.com/" },
  { share: 0.04, referrer: "https://www.reddit.com/" },
  { share: 0.08, referrer: "https://news.ycombinator.com/" },
  { share: 0.07, referrer: "https://github.com/" },
];

/** Campaigns, each with the referrer its links come from; one on `CAMPAIGN_SHARE` of landings. */
const CAMPAIGNS: readonly { readonly params: Record<string, string>; readonly source: Source }[] = [
  {
    params: { utm_source: "google", utm_medium: "cpc", utm_campaign: "brand_search", utm_term: "product analytics" },
    source: SOURCES[1]!,
  },
  { params: { utm_source: "newsletter", utm_medium: "email", utm_campaign: "launch_week" }, source: SOURCES[0]! },
  {
    params: { utm_source: "linkedin", utm_medium: "paid_social", utm_campaign: "q4_webinar", utm_content: "video" },
    source: SOURCES[5]!,
  },
  { params: { utm_source: "twitter", utm_medium: "social", utm_campaign: "changelog" }, source: SOURCES[4]! },
];
const CAMPAIGN_SHARE = 0.15;

/** One of `items`, each as likely as its share (shares adding up to 1). */
export function weighted<T extends { readonly share: number }>(rng: Rng, items: readonly T[]): T {
  let roll = rng.next();
  for (const item of items) {
    roll -= item.share;
    if (roll < 0) return item;
  }
  return items.at(-1)!;
}

/** Where a new session lands: a visitor on a marketing page, a user mostly straight into the app. */
export function landing(rng: Rng, user: { readonly project: number } | undefined): Touch {
  const campaign = rng.next() < CAMPAIGN_SHARE ? rng.pick(CAMPAIGNS) : undefined;
  const from = campaign?.source ?? (user && rng.next() < 0.6 ? SOURCES[0]! : weighted(rng, SOURCES));
  let landed = user && !campaign && rng.next() < 0.7 ? appPage(rng, user.project) : marketingPage(rng);
  if (campaign) {
    const params = { ...campaign.params };
    // Google Ads add their click ID to the URL: a value per click
    if (params.utm_medium === "cpc") params.gclid = `Cj0KCQiA${rng.int(1e9).toString(36)}`;
    const query = new URLSearchParams(params).toString();
    landed = { ...landed, url: `${landed.url}${landed.url.includes("?") ? "&" : "?"}${query}` };
    return { ...touchFrom(landed, from), campaign: params };
  }
  return touchFrom(landed, from);
}

function touchFrom(landed: Page, from: Source): Touch {
  return {
    page: landed,
    referrer: from.referrer,
    referringDomain: from.referrer === "$direct" ? "$direct" : new URL(from.referrer).host,
    searchEngine: from.searchEngine,
    campaign: undefined,
  };
}
