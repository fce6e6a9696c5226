import { describe, expect, test } from "bun:test";
import { Overlay } from "../../../src/storage/identity/overlay";

describe("Overlay", () => {
  test("lists entries by origin: each key under the origin it got last, cached ones only among all", () => {
    const overlay = new Overlay<number>();
    overlay.put("cached", 1, "cached");
    overlay.put("loaded", 2, "loaded");
    overlay.put("loaded then changed", 3, "loaded");
    overlay.change("loaded then changed", 4);
    overlay.change("changed then loaded", 5);
    overlay.put("changed then loaded", 6, "loaded");
    overlay.put("loaded then cached", 7, "loaded");
    overlay.put("loaded then cached", 8, "cached");

    expect(overlay.entries(["changed"])).toEqual([["loaded then changed", 4]]);
    expect(overlay.entries(["loaded"])).toEqual([
      ["loaded", 2],
      ["changed then loaded", 6],
    ]);
    expect(overlay.entries(["loaded", "changed"])).toEqual([
      ["loaded", 2],
      ["changed then loaded", 6],
      ["loaded then changed", 4],
    ]);
    // all of them, in the order the batch first met each key
    expect(overlay.entries()).toEqual([
      ["cached", 1],
      ["loaded", 2],
      ["loaded then changed", 4],
      ["changed then loaded", 6],
      ["loaded then cached", 8],
    ]);
    expect([...overlay.keys()]).toEqual(overlay.entries().map(([key]) => key));
    expect(["cached", "loaded then changed", "changed then loaded"].map((key) => overlay.isChanged(key))).toEqual([
      false,
      true,
      false,
    ]);
  });

  test("a key it never got reads as absent and unchanged", () => {
    const overlay = new Overlay<number>();
    overlay.put("a", 1, "cached");
    expect(overlay.get("b")).toBeUndefined();
    expect(overlay.isChanged("b")).toBe(false);
    expect(overlay.entries(["loaded", "changed"])).toEqual([]);
  });
});
