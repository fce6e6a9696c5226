/**
 * The browsers of the `web` load's people: each person keeps one. bench/record.ts visits the site once with each,
 * so that the keys posthog-js derives from the user agent (`$os`, `$browser`, `$device_type`, …) are its own;
 * the screen and window sizes here are the load's (headless Chromium keeps a window at least 500 px wide).
 */
export interface Device {
  readonly name: string;
  readonly userAgent: string;
  /** CSS pixels. */
  readonly screen: readonly [number, number];
  /** The page's size in CSS pixels: the screen less the browser's own bars. */
  readonly viewport: readonly [number, number];
  readonly scale: number;
  /** Its share of the people. */
  readonly share: number;
}

const CHROME = "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0";

export const DEVICES: readonly Device[] = [
  {
    name: "mac-chrome",
    userAgent: `Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) ${CHROME} Safari/537.36`,
    screen: [1512, 982],
    viewport: [1512, 823],
    scale: 2,
    share: 0.3,
  },
  {
    name: "windows-chrome",
    userAgent: `Mozilla/5.0 (Windows NT 10.0; Win64; x64) ${CHROME} Safari/537.36`,
    screen: [1920, 1080],
    viewport: [1920, 945],
    scale: 1,
    share: 0.24,
  },
  {
    name: "windows-edge",
    userAgent: `Mozilla/5.0 (Windows NT 10.0; Win64; x64) ${CHROME} Safari/537.36 Edg/131.0.0.0`,
    screen: [1536, 864],
    viewport: [1536, 730],
    scale: 1.25,
    share: 0.08,
  },
  {
    name: "mac-safari",
    userAgent:
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    screen: [1440, 900],
    viewport: [1440, 789],
    scale: 2,
    share: 0.1,
  },
  {
    name: "windows-firefox",
    userAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:132.0) Gecko/20100101 Firefox/132.0",
    screen: [1920, 1080],
    viewport: [1920, 955],
    scale: 1,
    share: 0.05,
  },
  {
    name: "iphone-safari",
    userAgent:
      "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    screen: [390, 844],
    viewport: [390, 664],
    scale: 3,
    share: 0.15,
  },
  {
    name: "android-chrome",
    userAgent: `Mozilla/5.0 (Linux; Android 10; K) ${CHROME} Mobile Safari/537.36`,
    screen: [412, 915],
    viewport: [412, 776],
    scale: 3,
    share: 0.08,
  },
];

export const deviceNamed = (name: string): Device => DEVICES.find((device) => device.name === name)!;
