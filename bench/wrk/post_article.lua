-- POST /v1/articles with a small JSON body; with a token after the nonce
-- (wrk ... -- <nonce> <token>), as its holder.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title": "Benchmark article", "tags": ["bench", "wrk"]}'

-- wrk builds its one request after init, so the header goes into every request.
function init(args)
  if args[2] then
    wrk.headers["Authorization"] = "Bearer " .. args[2]
  end
end
