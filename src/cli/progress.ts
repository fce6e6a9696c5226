import type { Progress } from "../import";

/** How an import shows its progress: how often, what to write each time, and what to do at the end. */
export interface ProgressView {
  readonly everyMs: number;
  show(progress: Progress): void;
  end(): void;
}

const BAR_WIDTH = 24;

/**
 * On a terminal, one line redrawn in place: a bar of the bytes read of the files' size, events per second and the
 * time left. Elsewhere (a log, a pipe), one JSON line every few seconds, which a log collector can read.
 */
export function progressView(stream: NodeJS.WriteStream = process.stderr): ProgressView {
  if (!stream.isTTY) {
    return {
      everyMs: 5000,
      show: (progress) => stream.write(`${JSON.stringify({ progress: rounded(progress) })}\n`),
      end: () => {},
    };
  }
  let shown = false;
  return {
    everyMs: 250,
    show(progress) {
      shown = true;
      stream.write(`\r${progressLine(progress)}\x1b[K`);
    },
    end() {
      if (shown) stream.write("\r\x1b[K");
    },
  };
}

/** `[#########---------------]  38%  412 MB of 1.1 GB  84,120 events/s  0:42 left`, shorter when the size is unknown. */
export function progressLine(progress: Progress): string {
  const rate = `${Math.round(progress.eventsPerSecond).toLocaleString("en-US")} events/s`;
  const rejected = progress.rejected > 0 ? `  ${progress.rejected.toLocaleString("en-US")} rejected` : "";
  if (progress.bytesTotal === undefined || progress.bytesTotal === 0) {
    return `${bytes(progress.bytesRead)} read  ${rate}${rejected}`;
  }
  const share = Math.min(1, progress.bytesRead / progress.bytesTotal);
  const filled = Math.round(share * BAR_WIDTH);
  const bar = `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}]`;
  const percent = `${Math.floor(share * 100)}%`.padStart(4);
  const perSecond = progress.bytesRead / progress.seconds;
  const left = perSecond > 0 ? `  ${duration((progress.bytesTotal - progress.bytesRead) / perSecond)} left` : "";
  return `${bar} ${percent}  ${bytes(progress.bytesRead)} of ${bytes(progress.bytesTotal)}  ${rate}${left}${rejected}`;
}

function bytes(count: number): string {
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
