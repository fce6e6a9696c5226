import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { clientIp } from "../../src/capture/ip";
import { loadConfig } from "../../src/config";
import { send, startService, type TestService } from "../helpers/service";

const KEY = "key-1";

describe("clientIp", () => {
  test("with no trusted proxies, the connection's address, whatever X-Forwarded-For claims", () => {
    expect(clientIp("203.0.113.9", "198.51.100.1", [])).toBe("203.0.113.9");
    expect(clientIp("2001:db8::1", null, [])).toBe("2001:db8::1");
    expect(clientIp(undefined, "198.51.100.1", [])).toBeUndefined();
  });

  test("from a trusted proxy, the nearest untrusted address in X-Forwarded-For", () => {
    const trusted = ["10.0.0.0/8", "192.0.2.7"];
    expect(clientIp("10.0.0.2", "198.51.100.1", trusted)).toBe("198.51.100.1");
    // a client's own forged entries sit to the left of what the proxies appended: never reached
    expect(clientIp("10.0.0.2", "6.6.6.6, 198.51.100.1, 192.0.2.7", trusted)).toBe("198.51.100.1");
    // every hop trusted: the farthest
    expect(clientIp("10.0.0.2", "10.1.1.1, 192.0.2.7", trusted)).toBe("10.1.1.1");
    // no header from a trusted proxy: the proxy itself
    expect(clientIp("10.0.0.2", null, trusted)).toBe("10.0.0.2");
  });

  test("a connection that is not a trusted proxy is the client, even when others are trusted", () => {
    expect(clientIp("198.51.100.1", "6.6.6.6", ["10.0.0.0/8"])).toBe("198.51.100.1");
  });

  test("IPv6 ranges, names of ranges, and IPv4 addresses that arrive IPv6-mapped", () => {
    expect(clientIp("fd00::5", "2001:db8::9", ["uniquelocal"])).toBe("2001:db8::9");
    expect(clientIp("::ffff:127.0.0.1", "203.0.113.4", ["loopback"])).toBe("203.0.113.4");
    expect(clientIp("::ffff:203.0.113.4", null, [])).toBe("203.0.113.4");
  });

  test("TRUSTED_PROXIES that is not a list of addresses or ranges is refused at startup, naming the bad entry", () => {
    expect(() => loadConfig({ TRUSTED_PROXIES: "10.0.0.0/8, not-an-address" })).toThrow("not-an-address");
    expect(() => loadConfig({ TRUSTED_PROXIES: "10.0.0.0/40" })).toThrow("10.0.0.0/40");
    expect(loadConfig({ TRUSTED_PROXIES: "10.0.0.0/8, ::1, loopback" }).trustedProxies).toEqual([
      "10.0.0.0/8",
      "::1",
      "loopback",
    ]);
  });
});

/** The `ip` column of each stored event, by event name. */
async function ipsOf(service: TestService): Promise<Record<string, string>> {
  const rows = await service.db.rows<{ event: string; ip: string }>(
    `SELECT event, ip FROM ${service.db.table("events")}`,
  );
  return Object.fromEntries(rows.map((row) => [row.event, row.ip]));
}

describe("events.ip", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ PUBLIC_API_KEYS: KEY });
  });
  afterAll(() => service.stop());

  test("the connection's address, or the event's own $ip; properties stay as sent", async () => {
    const batch = [
      { event: "plain", distinct_id: "ip-a" },
      { event: "own", distinct_id: "ip-a", properties: { $ip: "198.51.100.23" } },
      { event: "not text", distinct_id: "ip-a", properties: { $ip: { nested: 1 } } },
    ];
    const sent = await send(service, { api_key: KEY, batch }, { headers: { "x-forwarded-for": "6.6.6.6" } });
    expect(sent.status).toBe(200);
    expect(await ipsOf(service)).toEqual({ plain: "127.0.0.1", own: "198.51.100.23", "not text": "127.0.0.1" });
    const [plain] = await service.db.rows<{ properties: string }>(
      `SELECT properties FROM ${service.db.table("events_resolved")} WHERE event = 'plain'`,
    );
    expect(plain!.properties).toBe("{}");
  });
});

test("TRUSTED_PROXIES: behind a load balancer, the client's address from X-Forwarded-For", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY, TRUSTED_PROXIES: "127.0.0.1" });
  try {
    const batch = [{ event: "proxied", distinct_id: "ip-b" }];
    const headers = { "x-forwarded-for": "6.6.6.6, 203.0.113.50" };
    expect((await send(service, { api_key: KEY, batch }, { headers })).status).toBe(200);
    expect(await ipsOf(service)).toEqual({ proxied: "203.0.113.50" });
  } finally {
    await service.stop();
  }
});

test("CAPTURE_IP=0 stores no address, not even an event's own $ip (which stays in its properties as sent)", async () => {
  const service = await startService({ PUBLIC_API_KEYS: KEY, CAPTURE_IP: "0" });
  try {
    const batch = [
      { event: "plain", distinct_id: "ip-c" },
      { event: "own", distinct_id: "ip-c", properties: { $ip: "198.51.100.23" } },
    ];
    expect((await send(service, { api_key: KEY, batch })).status).toBe(200);
    expect(await ipsOf(service)).toEqual({ plain: "", own: "" });
  } finally {
    await service.stop();
  }
});
