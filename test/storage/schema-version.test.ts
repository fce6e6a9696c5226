import { expect, test } from "bun:test";
import { MATERIALIZED_BY_DEFAULT, PERSON_MATERIALIZED_BY_DEFAULT } from "../../src/config";
import { SCHEMA_VERSION, schemaObjects } from "../../src/storage/schema";

// A backup records the schema version, and a restore refuses one newer than its own (storage/backup): the version
// must move with the schema. Each version's statements, hashed: a change to a table or view fails here until
// SCHEMA_VERSION is raised and its hash added.
const HASHES: Record<number, string> = {
  1: "6fb54545af2d70e140e44d0cfc150bb2e8f588de424769c476ad3ed0b2e6028c",
  2: "95b518a475be021116355cda30baa0d611a74f545d823cb8d1efe546f8c18996", // sessions counts: uniq, not uniqExact
  3: "caf80d1d6ed5e446df3d88cc63aa9b769c50c872117d96da031a0927fa34ad24", // property columns (MATERIALIZED_PROPERTIES)
  4: "26cbc5046379581b5621729da77f9fc99948e0fd3a68feae5658d0928bc23f5c", // sessions' entry: a column a property
  5: "ed866a92e80e5fd6e4969b79e87a5209b6af0bd390d4101af94a28f14ea69cd1", // events_resolved without the tax; each view its definition's digest as its comment
  6: "92990b960d4db1359df7d945b0e3c09375c4f16080290c991eed3aceb5973981", // sessions' entry columns: a value only where the view has one
  7: "8344b58cfaaa8b4feb6bf31dc9b6ba7657d6d44000c1880230ed717c3f3b32cb", // events_resolved reads only the person an override went to
  8: "0231590d3d2ce15bc366f61537ef54e012c6107b62b5710d41247c9fa81ec227", // person property columns (MATERIALIZED_PERSON_PROPERTIES)
  9: "17ae0e5475a9f76a9c7e2a4371259ed71d8e4e657e6520d50afd8a6299bae13e", // squashes: person_overrides.written_at, person_squashes, events_resolved joins only unsquashed overrides
  10: "c7c839878d02332b4b6319e1b8bdd6137b7a8285597c52d9588bb9fd67226f55", // events partitioned by day (2020–2059; by month outside), so days settle into one part each
};

test("SCHEMA_VERSION names the schema as it is: raise it, and add its hash here, when a table or view changes", () => {
  const statements = [false, true].flatMap((typedProperties) =>
    [undefined, "cluster"].flatMap((cluster) =>
      schemaObjects("db", cluster, {
        typedProperties,
        materializedProperties: MATERIALIZED_BY_DEFAULT,
        materializedPersonProperties: PERSON_MATERIALIZED_BY_DEFAULT,
      }).map((object) => object.create),
    ),
  );
  const hash = new Bun.CryptoHasher("sha256").update(statements.join("\n")).digest("hex");
  expect({ version: SCHEMA_VERSION, hash }).toEqual({ version: SCHEMA_VERSION, hash: HASHES[SCHEMA_VERSION]! });
});
