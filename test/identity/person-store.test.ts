import { expect, test } from "bun:test";
import { personIdFor } from "../../src/identity";
import { allLinks, loadNeighbourhood } from "../../src/identity/person-store";
import { MAX_LIST_BYTES } from "../../src/storage/sql";
import { send, startService } from "../helpers/service";

const KEY = "key-1";

test("allLinks pages through every link exactly once, however the pages fall", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY });
  try {
    const ids = Array.from({ length: 7 }, (_, i) => `page-${i}`);
    const batch = ids.map((id) => ({ event: "$set", distinct_id: id, properties: { $set: { id } } }));
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    for (const pageSize of [1, 2, 3, 7, 100]) {
      const linkPages = [];
      for await (const page of allLinks(service.db, pageSize)) linkPages.push([...page.keys()]);
      expect(linkPages.flat()).toEqual([...ids].sort());
      expect(linkPages.every((page) => page.length <= pageSize)).toBe(true);
    }
  } finally {
    await service.stop();
  }
});

test("loadNeighbourhood finds a person's other IDs and all their facts in one read, each fact collapsed as the table does", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY });
  try {
    const at = (second: number) => `2026-01-01T00:00:0${second}Z`;
    const batches = [
      [{ event: "$pageview", distinct_id: "sp-a", timestamp: at(5), properties: { $set: { k: "late" } } }],
      [{ event: "$pageview", distinct_id: "sp-a", timestamp: at(1), properties: { $set_once: { k: "early" } } }],
      [{ event: "$identify", distinct_id: "sp-a", timestamp: at(2), properties: { $anon_distinct_id: "sp-b" } }],
      [{ event: "$identify", distinct_id: "sp-c", timestamp: at(3), properties: { $anon_distinct_id: "sp-b" } }],
    ];
    for (const batch of batches) expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    const neighbourhood = await loadNeighbourhood(service.db, ["sp-a"]);
    const facts = neighbourhood.facts.filter((fact) => fact.distinct_id === "sp-a");
    const byKind = Object.fromEntries(facts.map((fact) => [`${fact.kind}:${fact.name}`, fact]));
    expect(Object.keys(byKind).sort()).toEqual([
      `born:${personIdFor("sp-a")}`,
      "identified:",
      "joined:sp-b",
      "property:k",
    ]);
    expect(byKind["property:k"]).toMatchObject({ writes: 2 });
    expect(byKind["property:k"]!.at[0] as string).toBe("2026-01-01 00:00:01.000000");
    expect(byKind["property:k"]!.last_write.slice(0, 2) as unknown[]).toEqual([1, "2026-01-01 00:00:05.000000"]);
    expect(byKind["property:k"]!.last_write[4]).toBe('"late"');
    expect([...byKind["property:k"]!.first_once]).toEqual([
      0,
      "2026-01-01 00:00:01.000000",
      expect.any(Number),
      '"early"',
    ]);
    expect(typeof byKind["property:k"]!.last_write[2]).toBe("number");

    // sp-c joined sp-b only; reading from sp-a finds it through the person they share
    const shared = neighbourhood.links;
    expect([...shared.keys()].sort()).toEqual(["sp-a", "sp-b", "sp-c"]);
    expect(new Set(neighbourhood.facts.map((fact) => fact.distinct_id))).toEqual(new Set(["sp-a", "sp-b", "sp-c"]));
    // a new ID has facts and no link yet: its facts come all the same
    await service.db.insert("identity_facts", [{ ...facts[0]!, distinct_id: "sp-new" }]);
    const lone = await loadNeighbourhood(service.db, ["sp-new"]);
    expect({ links: lone.links.size, facts: lone.facts.map((fact) => fact.distinct_id) }).toEqual({
      links: 0,
      facts: ["sp-new"],
    });
    expect(new Set([...shared.values()].map((link) => link.personId))).toEqual(new Set([personIdFor("sp-a")]));
  } finally {
    await service.stop();
  }
});

test("loadNeighbourhood reads each fact once when a person's IDs are in different chunks of a long list", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY });
  try {
    const batch = [
      { event: "$pageview", distinct_id: "ch-anon", properties: { $process_person_profile: false } },
      { event: "$identify", distinct_id: "ch-user", properties: { $anon_distinct_id: "ch-anon", $set: { a: 1 } } },
      { event: "$set", distinct_id: "ch-user", properties: { $set: { b: 2 } } },
    ];
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    const key = (fact: { distinct_id: string; kind: string; name: string }) =>
      `${fact.distinct_id} ${fact.kind} ${fact.name}`;
    const once = await loadNeighbourhood(service.db, ["ch-anon", "ch-user"]);
    // an ID as long as a whole chunk's list: the two IDs of the person are read in chunks of their own, each of
    // which finds the other through the person they share
    const apart = await loadNeighbourhood(service.db, ["ch-anon", "x".repeat(MAX_LIST_BYTES), "ch-user"]);
    expect(apart.facts.map(key).sort()).toEqual(once.facts.map(key).sort());
    expect(new Set(apart.facts.map(key)).size).toBe(apart.facts.length);
    expect(apart.facts.reduce((sum, fact) => sum + fact.writes, 0)).toBe(
      once.facts.reduce((sum, fact) => sum + fact.writes, 0),
    );
    expect(apart.links).toEqual(once.links);
  } finally {
    await service.stop();
  }
});
