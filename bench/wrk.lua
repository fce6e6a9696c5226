-- POSTs the batches in the file named by the first script argument (one JSON body a line), each thread starting
-- at its own place in the list and cycling through it.
local bodies = {}
local next = 1

function init(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  next = math.random(#bodies)
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
  return wrk.format("POST", "/batch/", headers, bodies[next])
end

-- With BENCH_PORTS (comma-separated), thread i connects to the i-th port (cycling) on the URL's host, so that one
-- wrk spreads its connections evenly over several services and reports one latency distribution for all.
local ports = os.getenv("BENCH_PORTS") or ""
local threads = 0

function setup(thread)
  local list = {}
  for port in ports:gmatch("%d+") do list[#list + 1] = port end
  if #list == 0 then return end
  thread.addr = wrk.lookup(wrk.host, list[threads % #list + 1])[1]
  threads = threads + 1
end
