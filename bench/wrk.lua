-- POSTs the batches in the file named by the first script argument (one JSON body a line), each thread starting
-- at its own place in the list and cycling through it.
local bodies = {}
local next = 1

-- With BENCH_UNIQUE=1, every request's events are new events, however often wrk replays the file: each body is
-- split once, at init, around the values that make an event itself (`"uuid"`, `"$insert_id"`) or date it
-- (`"timestamp"`, `"$time"`, the body's `"sent_at"`), and every request joins the pieces with new ones: a UUIDv7
-- of the request's time, this thread and a counter; an $insert_id of the thread and the counter; and the body's
-- timestamps moved together so that its last event is now. The people, sessions and pages stay the file's.
local unique = os.getenv("BENCH_UNIQUE") == "1"
local pieces = {}
-- this thread's number (setup) and its event counter, started at random so that two runs never meet
thread_id = thread_id or 0
local counter = 0

local SLOTS = {
  { kind = "uuid", prefix = '"uuid":"', value = "%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x" },
  { kind = "insert", prefix = '"$insert_id":"', value = "[%w]+" },
  { kind = "timestamp", prefix = '"timestamp":"', value = "%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ" },
  { kind = "time", prefix = '"$time":', value = "[%d%.]+" },
  { kind = "sent", prefix = '"sent_at":"', value = "%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ" },
}

for _, slot in ipairs(SLOTS) do slot.anchored = "^" .. slot.value end

-- days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil)
local function days(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((m + 9) % 12) + 2) / 5) + d - 1
  return era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
end

local function isoMs(text)
  local y, mo, d, h, mi, s, ms = text:match("(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)%.(%d+)Z")
  return ((days(tonumber(y), tonumber(mo), tonumber(d)) * 24 + h) * 60 + mi) * 60000 + s * 1000 + ms
end

-- Texts made once, so that a request formats nothing per event (string.format runs in LuaJIT's interpreter:
-- formatting every value took 1 ms of wrk's CPU a request): 4 hex digits of every 16-bit number, 3 digits of
-- every millisecond, and each second's date and time.
local HEX4, MS3 = {}, {}
local second, secondText = nil, nil
local function iso(ms)
  local s = math.floor(ms / 1000)
  if s ~= second then second, secondText = s, os.date("!%Y-%m-%dT%H:%M:%S.", s) end
  return secondText .. MS3[ms % 1000] .. "Z"
end

-- a body as literal pieces (strings) and slots ({kind, ms}), with `last`: its latest time
local function split(body)
  local found = {}
  for _, slot in ipairs(SLOTS) do
    local from = 1
    while true do
      local s, e = body:find(slot.prefix, from, true)
      if not s then break end
      local vs, ve = body:find(slot.anchored, e + 1)
      if vs then found[#found + 1] = { s = vs, e = ve, kind = slot.kind } end
      from = e + 1
    end
  end
  table.sort(found, function(a, b) return a.s < b.s end)
  local out, at, last = { last = 0 }, 1, 0
  for _, f in ipairs(found) do
    out[#out + 1] = body:sub(at, f.s - 1)
    local text = body:sub(f.s, f.e)
    local ms = 0
    if f.kind == "timestamp" or f.kind == "sent" then ms = isoMs(text) end
    if f.kind == "time" then ms = math.floor(tonumber(text) * 1000 + 0.5) end
    if ms > last then last = ms end
    out[#out + 1] = { f.kind, ms }
    at = f.e + 1
  end
  out[#out + 1] = body:sub(at)
  out.last = last
  return out
end

-- the body, with new events: each slot filled anew
local function fresh(body)
  local now = os.time() * 1000
  local shift = now - body.last
  -- a UUIDv7 of now: its time, version 7 and this thread, its variant, then the counter's 48 bits
  local uuidPrefix = string.format("%08x-%04x-7%03x-8000-", math.floor(now / 65536), now % 65536, thread_id % 4096)
  local parts = {}
  for i, piece in ipairs(body) do
    if type(piece) == "string" then
      parts[i] = piece
    else
      local kind, ms = piece[1], piece[2]
      if kind == "uuid" or kind == "insert" then
        counter = counter + 1
        local digits = HEX4[math.floor(counter / 4294967296) % 65536] .. HEX4[math.floor(counter / 65536) % 65536]
          .. HEX4[counter % 65536]
        parts[i] = (kind == "uuid" and uuidPrefix or HEX4[thread_id % 65536]) .. digits
      elseif kind == "time" then
        local t = ms + shift
        parts[i] = math.floor(t / 1000) .. "." .. MS3[t % 1000]
      else
        parts[i] = iso(ms + shift)
      end
    end
  end
  return table.concat(parts)
end

function init(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  next = math.random(#bodies)
  if unique then
    for n = 0, 65535 do HEX4[n] = string.format("%04x", n) end
    for n = 0, 999 do MS3[n] = string.format("%03d", n) end
    counter = math.random(0, 2 ^ 30) * 4096
    for i, body in ipairs(bodies) do pieces[i] = split(body) end
  end
end

-- With BENCH_FORWARDED_FOR=1, each request comes "through a proxy" from a random IPv4 address (some private, as
-- traffic has), for a service that trusts the loopback address (TRUSTED_PROXIES=127.0.0.1).
local forwarded = os.getenv("BENCH_FORWARDED_FOR") == "1"

function request()
  next = next % #bodies + 1
  local headers = { ["Content-Type"] = "application/json" }
  if forwarded then
    headers["X-Forwarded-For"] = string.format("%d.%d.%d.%d", math.random(1, 223), math.random(0, 255),
      math.random(0, 255), math.random(1, 254))
  end
  return wrk.format("POST", "/batch/", headers, unique and fresh(pieces[next]) or bodies[next])
end

-- With BENCH_PORTS (comma-separated), thread i connects to the i-th port (cycling) on the URL's host, so that one
-- wrk spreads its connections evenly over several services and reports one latency distribution for all.
local ports = os.getenv("BENCH_PORTS") or ""
local threads = 0

function setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
  local list = {}
  for port in ports:gmatch("%d+") do list[#list + 1] = port end
  if #list == 0 then return end
  thread.addr = wrk.lookup(wrk.host, list[(threads - 1) % #list + 1])[1]
end
