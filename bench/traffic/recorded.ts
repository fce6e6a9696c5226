/** The recording of what the real SDKs send (bench/record.ts makes it), and how the `web` load reads it. */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const RECORDING = join(import.meta.dir, "recorded.json");

/** One request an SDK posted, decoded: its events as sent, and the body's other keys. */
export interface RecordedRequest {
  readonly sdk: "posthog-js" | "posthog-node";
  readonly path: string;
  readonly query: string;
  readonly contentType: string;
  readonly contentEncoding: string;
  /** The body's keys besides the events (posthog-node: `api_key`, `sent_at`; posthog-js sends a bare array). */
  readonly envelope: Readonly<Record<string, unknown>>;
  readonly events: readonly Record<string, unknown>[];
}

export interface Recording {
  /** The day it was recorded. */
  readonly recorded: string;
  readonly sdks: Readonly<Record<"posthog-js" | "posthog-node", string>>;
  /** Chromium's version string, which posthog-js ran in. */
  readonly browser: string;
  readonly requests: readonly RecordedRequest[];
}

export function readRecording(): Recording {
  return JSON.parse(readFileSync(RECORDING, "utf8")) as Recording;
}
