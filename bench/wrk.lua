-- POSTs the batches in the file named by the first script argument (one JSON body a line), each thread starting
-- at its own place in the list and cycling through it.
local bodies = {}
local next = 1

function init(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  next = math.random(#bodies)
end

function request()
  next = next % #bodies + 1
  return wrk.format("POST", "/batch/", { ["Content-Type"] = "application/json" }, bodies[next])
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
