-- POST /v1/payments with a fresh Idempotency-Key for every request: thread id,
-- counter and a per-run nonce (wrk ... -- <nonce> <token>) keep keys unique across
-- rounds; with a token after the nonce, as its holder.
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  nonce = args[1] or "run"
  authorization = args[2] and ("Bearer " .. args[2])
  counter = 0
end

function request()
  counter = counter + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = nonce .. "-" .. tid .. "-" .. counter,
    ["Authorization"] = authorization,
  }
  return wrk.format("POST", "/v1/payments", headers, '{"amount": 10.5, "currency": "EUR"}')
end
