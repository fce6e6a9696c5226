import type { Progress } from "../import";
import type { CopyProgress } from "../storage";

/** How a command shows its progress: how often, what to write each time, and what to do at the end. */
export interface ProgressView<P = Progress> {
  readonly everyMs: number;
  show(progress: P): void;
  end(): void;
}

const BAR_WIDTH = 24;

/**
 * An import's: on a terminal, one line redrawn in place: a bar of the bytes read of the files' size, events per
 * second and the time left. Elsewhere (a log, a pipe), one JSON line every few seconds, which a log collector can
 * read.
 */
export function progressView(stream: NodeJS.WriteStream = process.stderr): ProgressView {
  return lineView(stream, progressLine, rounded);
}

/** A backup's or restore's, the same way: a bar of the bytes copied, the rate and the time left. */
export function copyProgressView(stream: NodeJS.WriteStream = process.stderr): ProgressView<CopyProgress> {
  return lineView(stream, copyLine, (progress) => ({ ...progress, seconds: Math.round(progress.seconds * 10) / 10 }));
}

/**
 * `show` is called every `everyMs`: a view that writes each call on a terminal, and every call (fewer of them) to a
 * log as JSON. The caller calls as often as `everyMs` says.
 */
function lineView<P>(
  stream: NodeJS.WriteStream,
  line: (progress: P) => string,
  json: (progress: P) => P,
): ProgressView<P> {
  if (!stream.isTTY) {
    return {
      everyMs: 5000,
      show: (progress) => stream.write(`${JSON.stringify({ progress: json(progress) })}\n`),
      end: () => {},
    };
  }
  let shown = false;
  return {
    everyMs: 250,
    show(progress) {
      shown = true;
      stream.write(`\r${line(progress)}\x1b[K`);
    },
    end() {
      if (shown) stream.write("\r\x1b[K");
    },
  };
}

/**
 * `[#########---------------]  37%  412 MB of 1.1 GB  210 MB/s  0:03 left`; through a running service, then the
 * events it has ingested since the backup's moment (`  3,200 events ingested since`).
 */
export function copyLine(progress: CopyProgress): string {
  const perSecond = progress.seconds > 0 ? progress.bytes / progress.seconds : 0;
  const rate = `${bytes(perSecond)}/s`;
  const ingested =
    progress.ingested === undefined ? "" : `  ${progress.ingested.toLocaleString("en-US")} events ingested since`;
  if (progress.totalBytes <= 0) return `${bytes(progress.bytes)} copied  ${rate}${ingested}`;
  return `${barLine(progress.bytes, progress.totalBytes, progress.seconds, rate)}${ingested}`;
}

/** `show`, called at most every `everyMs`, the first time `everyMs` after the start: a quick copy shows none. */
export function throttled<P>(everyMs: number, show: (progress: P) => void): (progress: P) => void {
  let last = performance.now();
  return (progress) => {
    const now = performance.now();
    if (now - last < everyMs) return;
    last = now;
    show(progress);
  };
}

/** `[#########---------------]  38%  412 MB of 1.1 GB  84,120 events/s  0:42 left`, shorter when the size is unknown. */
export function progressLine(progress: Progress): string {
  const rate = `${Math.round(progress.eventsPerSecond).toLocaleString("en-US")} events/s`;
  const rejected = progress.rejected > 0 ? `  ${progress.rejected.toLocaleString("en-US")} rejected` : "";
  if (progress.bytesTotal === undefined || progress.bytesTotal === 0) {
    return `${bytes(progress.bytesRead)} read  ${rate}${rejected}`;
  }
  return `${barLine(progress.bytesRead, progress.bytesTotal, progress.seconds, rate)}${rejected}`;
}

/** A bar of `done` bytes of `total`, the rate, and the time left at the pace so far. */
function barLine(done: number, total: number, seconds: number, rate: string): string {
  const share = Math.min(1, done / total);
  const filled = Math.round(share * BAR_WIDTH);
  const bar = `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}]`;
  const percent = `${Math.floor(share * 100)}%`.padStart(4);
  const perSecond = done / seconds;
  const left = perSecond > 0 ? `  ${duration(Math.max(0, total - done) / perSecond)} left` : "";
  return `${bar} ${percent}  ${bytes(done)} of ${bytes(total)}  ${rate}${left}`;
}

/** 1.1 GB: decimal units, three figures. */
export function bytes(count: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = count;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 || value >= 100 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

/** h:mm:ss, or m:ss under an hour. */
function duration(seconds: number): string {
  const whole = Math.ceil(seconds);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = String(whole % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

function rounded(progress: Progress): Progress {
  return {
    ...progress,
    seconds: Math.round(progress.seconds * 10) / 10,
    eventsPerSecond: Math.round(progress.eventsPerSecond),
  };
}
