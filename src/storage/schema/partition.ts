/**
 * The partition of an event: its UTC day from 2020 to 2059, its month before and after. Days are what `FINAL`
 * and retention want (write/settle.ts); months bound what made-up dates can make: a client may send any time
 * from 1900 to 2299, and a partition a day would let it make 146,000 partitions (the engine refuses inserts past
 * 100,000 parts in a table), where these allow some 19,000.
 */
export const EVENTS_PARTITION =
  "if(toYear(timestamp) BETWEEN 2020 AND 2059, toYYYYMMDD(timestamp), toYYYYMM(timestamp))";

/**
 * `EVENTS_PARTITION` of a stored timestamp (`2026-11-27 12:00:00.000000`), as text: `2026-11-27`, or `2019-12`
 * outside the days. A table made before schema version 10 is by month, so it has as many partitions or fewer.
 */
export function eventPartition(timestamp: string): string {
  const year = timestamp.slice(0, 4);
  return timestamp.slice(0, year >= "2020" && year <= "2059" ? 10 : 7);
}
