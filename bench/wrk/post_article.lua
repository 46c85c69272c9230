-- POST /v1/articles with a small JSON body.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title": "Benchmark article", "tags": ["bench", "wrk"]}'
