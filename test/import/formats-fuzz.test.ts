import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isObject } from "../../src/contract/json";
import { importEvent } from "../../src/import";
import { FORMATS, type FormatName, ImportMemory } from "../../src/import/formats";
import { caseRng, hostileValue, type Rng } from "../helpers/fuzz";

// Each vendor's mapping over its sample lines with one field, anywhere in the line, replaced by something hostile
// (a wrong type, a huge or deep value, a hostile string): every line gives items or a reason, every item an event
// or a rejection, and nothing throws.

const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const CASES = 2000;

const samples = (name: FormatName): unknown[] =>
  readFileSync(join(import.meta.dir, "samples", `${name}.jsonl`), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));

/** A copy of `value` with one field, at any depth, replaced. */
function withHostileField(rng: Rng, value: unknown): unknown {
  if (!isObject(value) || rng.next() < 0.1) return hostileValue(rng);
  const keys = Object.keys(value);
  const key =
    rng.next() < 0.15 ? rng.pick(["event", "type", "properties", "context", "user_properties"]) : rng.pick(keys);
  return { ...value, [key]: rng.next() < 0.5 ? withHostileField(rng, value[key]) : hostileValue(rng) };
}

const names: FormatName[] = ["posthog", "mixpanel", "amplitude", "segment"];
for (const name of names) {
  describe(`${name}, fuzzed`, () => {
    test(`${CASES} lines with a hostile field each: items or a reason, never an exception (seed ${SEED})`, () => {
      const lines = samples(name);
      const memory = new ImportMemory(64);
      const outcomes = { events: 0, rejected: 0, reasons: 0 };
      for (let index = 0; index < CASES; index++) {
        const rng = caseRng(SEED, index);
        const line = withHostileField(rng, rng.pick(lines));
        const records = FORMATS[name].records(line, memory);
        if ("reason" in records) {
          outcomes.reasons++;
          continue;
        }
        for (const [at, item] of records.items.entries()) {
          const event = importEvent(item, { line: index + 1, index: at, text: String(index) });
          if (typeof event === "string") outcomes.rejected++;
          else outcomes.events++;
        }
      }
      expect(outcomes.events).toBeGreaterThan(0); // the hostile field left most lines importable
      expect(outcomes.events + outcomes.rejected + outcomes.reasons).toBeGreaterThanOrEqual(CASES);
    });
  });
}
