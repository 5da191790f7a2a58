-- wrk script for bench/run.  Arguments after "--": the request target and the Host header.
-- Through a proxy the target is the absolute URI (http://origin.test:PORT/1k) sent to the proxy
-- port; for DIRECT it is the path.  done() prints one JSON line the harness parses.
init = function(args)
   wrk.path = args[1]
   wrk.headers["Host"] = args[2]
end

done = function(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "WRKJSON {\"requests\":%d,\"duration_us\":%d,\"bytes\":%d,\"connect_errors\":%d," ..
      "\"read_errors\":%d,\"write_errors\":%d,\"status_errors\":%d,\"timeouts\":%d," ..
      "\"p50_us\":%d,\"p99_us\":%d,\"max_us\":%d}\n",
      summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
      e.timeout, latency:percentile(50), latency:percentile(99), latency.max))
end
