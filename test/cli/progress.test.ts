import { describe, expect, test } from "bun:test";
import { copyLine, progressLine, progressView } from "../../src/cli/progress";
import type { Progress } from "../../src/import";

// What a person watching an import sees: a bar on a terminal, JSON lines in a log.

const at = (bytesRead: number, bytesTotal: number | undefined, seconds: number): Progress => ({
  bytesRead,
  bytesTotal,
  lines: 1000,
  imported: 84_120 * seconds,
  rejected: 0,
  seconds,
  eventsPerSecond: 84_120,
});

/** A stream that keeps what is written to it. */
function stream(isTTY: boolean) {
  const written: string[] = [];
  return { written, stream: { isTTY, write: (text: string) => written.push(text) } as unknown as NodeJS.WriteStream };
}

describe("progressLine", () => {
  test("a bar of the bytes read, the rate and the time left at that pace", () => {
    expect(progressLine(at(412_000_000, 1_100_000_000, 10))).toBe(
      "[#########---------------]  37%  412 MB of 1.1 GB  84,120 events/s  0:17 left",
    );
    expect(progressLine({ ...at(1_100_000_000, 1_100_000_000, 4000), rejected: 3 })).toBe(
      "[########################] 100%  1.1 GB of 1.1 GB  84,120 events/s  0:00 left  3 rejected",
    );
  });

  test("standard input has no size: the bytes read and the rate", () => {
    expect(progressLine(at(5_300, undefined, 1))).toBe("5.3 KB read  84,120 events/s");
  });
});

describe("progressView", () => {
  test("on a terminal, one line redrawn in place and cleared at the end", () => {
    const { written, stream: tty } = stream(true);
    const view = progressView(tty);
    view.show(at(1, 2, 1));
    view.end();
    expect(written).toEqual([`\r${progressLine(at(1, 2, 1))}\x1b[K`, "\r\x1b[K"]);
    expect(view.everyMs).toBeLessThan(1000);
  });

  test("elsewhere, a JSON line every few seconds", () => {
    const { written, stream: log } = stream(false);
    const view = progressView(log);
    view.show({ ...at(10, 20, 1.23456), eventsPerSecond: 99.7 });
    expect(written.map((line) => JSON.parse(line))).toEqual([
      {
        progress: {
          bytesRead: 10,
          bytesTotal: 20,
          lines: 1000,
          imported: 84_120 * 1.23456,
          rejected: 0,
          seconds: 1.2,
          eventsPerSecond: 100,
        },
      },
    ]);
    expect(view.everyMs).toBe(5000);
  });
});

describe("copyLine", () => {
  test("a backup's or restore's bar: bytes copied of the database's, the rate, the time left", () => {
    expect(copyLine({ bytes: 412_000_000, totalBytes: 1_100_000_000, files: 10, seconds: 2 })).toBe(
      "[#########---------------]  37%  412 MB of 1.1 GB  206 MB/s  0:04 left",
    );
    expect(copyLine({ bytes: 5_300, totalBytes: 0, files: 1, seconds: 1 })).toBe("5.3 KB copied  5.3 KB/s");
  });

  test("through a running service, the events it has ingested since the backup's moment", () => {
    expect(copyLine({ bytes: 412_000_000, totalBytes: 1_100_000_000, files: 10, seconds: 2, ingested: 3200 })).toBe(
      "[#########---------------]  37%  412 MB of 1.1 GB  206 MB/s  0:04 left  3,200 events ingested since",
    );
    expect(copyLine({ bytes: 5_300, totalBytes: 0, files: 1, seconds: 1, ingested: 0 })).toBe(
      "5.3 KB copied  5.3 KB/s  0 events ingested since",
    );
  });
});
