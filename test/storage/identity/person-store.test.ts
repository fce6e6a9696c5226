import { expect, test } from "bun:test";
import { personIdFor } from "../../../src/storage/identity";
import { allLinks, allPersons } from "../../../src/storage/identity/person-store";
import { send, startService } from "../../helpers/service";

const KEY = "key-1";

test("allLinks and allPersons page through every row exactly once, however the pages fall", async () => {
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
      const persons = [];
      for await (const page of allPersons(service.db, pageSize)) persons.push(...page.values());
      expect(persons.map((person) => person.id).sort()).toEqual(ids.map(personIdFor).sort());
      expect(new Set(persons.map((person) => JSON.parse(person.properties).id))).toEqual(new Set(ids));
    }
  } finally {
    await service.stop();
  }
});
