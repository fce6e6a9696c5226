import { expect, test } from "bun:test";
import { type ImportEvent, importEvent } from "../../src/import";
import { IMPORT_NAMESPACE } from "../../src/import/formats";

const where = { line: 7, index: 1, text: '{"line": "as read"}' };
const derived = Bun.randomUUIDv5(`7:1:${where.text}`, IMPORT_NAMESPACE);
const item = { event: "clicked", distinct_id: "user-1", timestamp: "2024-05-01T12:00:00.000Z" };

test("an item keeps a UUID of its own (lower-cased); one without, or with one unusable, gets the line's UUIDv5", () => {
  const own = "0190B4A1-0000-7000-8000-00000000000A";
  const kept = importEvent({ ...item, uuid: own }, where) as ImportEvent;
  expect(kept.accepted.uuid).toBe(own.toLowerCase());
  expect(kept.item.uuid).toBe(own); // sent on as it came
  for (const uuid of [undefined, null, "", "not-a-uuid", 42, "00000000-0000-0000-0000-000000000000"]) {
    const given = importEvent({ ...item, uuid }, where) as ImportEvent;
    expect(given.accepted.uuid).toBe(derived);
    expect(given.item).toEqual({ ...item, uuid: derived });
    expect(given.accepted).toMatchObject({
      event: "clicked",
      distinctId: "user-1",
      timestamp: "2024-05-01 12:00:00.000000",
    });
  }
  // the same line, item and text give the same UUID on every run
  expect((importEvent({ ...item }, where) as ImportEvent).accepted.uuid).toBe(derived);
});

test("what is rejected, and why, is the same with or without a UUID", () => {
  for (const uuid of [undefined, "0190b4a1-0000-7000-8000-00000000000a"]) {
    expect(importEvent(["not an object"], where)).toBe("not an event");
    expect(importEvent({ ...item, uuid, timestamp: undefined }, where)).toBe("no timestamp");
    expect(importEvent({ ...item, uuid, timestamp: "yesterday" }, where)).toBe("invalid timestamp");
    expect(importEvent({ ...item, uuid, event: "" }, where)).toBe("no event name");
    expect(importEvent({ ...item, uuid, distinct_id: undefined }, where)).toBe("no distinct ID");
  }
});
