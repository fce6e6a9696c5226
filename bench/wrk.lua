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
