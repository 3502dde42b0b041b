#!/usr/bin/env bash
# Instructions per request of the service, counted by callgrind: a figure a busy host does not change,
# unlike req/s or CPU time (docs/benchmarks/tuning.md, "Counted instructions").
#
#   bash bench/count-instructions.sh on|off [requests] [path]
#
# on: request logs as npm start writes them (info); off: LOG_LEVEL=warn. 10,000 pets seeded, 50,000
# requests of warm-up (not counted; WARMUP=n to change), then `requests` (3,000) counted, 8 at a time, load
# shedding off (a process under callgrind runs about 50 times slower, which it would read as overload).
# The warm-up lets V8's optimizing compiler reach the request path, as it has in any service serving for
# a minute: after 2,000 requests the code counted was still the baseline compilers' (195k instructions
# per request then, 123k once optimized). Printed: all threads, and the main thread alone (the garbage
# collector's and compiler's helper threads vary most from run to run).
# Needs valgrind and curl (Debian: apt-get install valgrind curl).
set -euo pipefail
mode=${1:?on or off}
requests=${2:-3000}
path=${3:-/v1/pets/5000}
root=$(cd "$(dirname "$0")/.." && pwd)
node="$root/node_modules/.bin/node"
dir=$(mktemp -d)
service=
trap '[ -n "$service" ] && kill -KILL "$service" 2> /dev/null; rm -rf "$dir"' EXIT
port=18123
key=psk_$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=' | head -c 43)
export API_KEYS="bench:$key" DATABASE_URL="sqlite:$dir/pets.db" PORT=$port HOST=127.0.0.1 METRICS_PORT=0 \
  RATE_LIMIT_PER_MINUTE=10000000 MAX_EVENT_LOOP_DELAY_MS=0
level=info
[ "$mode" = off ] && level=warn
"$node" "$root/bin/petstore.js" seed --count 10000 > /dev/null
LOG_LEVEL=$level valgrind --tool=callgrind --smc-check=all-non-file --instr-atstart=no --separate-threads=yes \
  --callgrind-out-file="$dir/callgrind.out" \
  "$node" --max-semi-space-size=16 "$root/bin/petstore.js" serve > "$dir/stdout.log" 2> "$dir/valgrind.log" &
service=$!
ready=
for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && ready=1 && break; sleep 1; done
[ -n "$ready" ] || { echo "the service did not answer within 300 s: $(tail -3 "$dir/valgrind.log")" >&2; exit 1; }

# curl reads its URLs from a config file: one process sends them all, 8 at a time.
send() {
  for _ in $(seq 1 "$1"); do printf 'url = "http://127.0.0.1:%s%s"\noutput = /dev/null\n' "$port" "$path"; done \
    > "$dir/urls"
  curl -s --no-progress-meter -w '%{http_code}\n' -H "Authorization: Bearer $key" -K "$dir/urls" --parallel --parallel-max 8
}
send "${WARMUP:-50000}" > /dev/null
callgrind_control -i on "$service" > /dev/null 2>&1
statuses=$(send "$requests" | sort | uniq -c | tr -s ' \n' ' ')
callgrind_control -i off "$service" > /dev/null 2>&1
callgrind_control -d "$service" > /dev/null 2>&1
kill -TERM "$service"
wait "$service" || true
service=
# The dump above holds the counted requests, a file per thread (…-01 is the main thread); the dump at exit
# (callgrind.out) counts nothing more.
total=$(grep -h '^totals:' "$dir"/callgrind.out.* | awk '{ sum += $2 } END { printf "%.0f", sum }')
main=$(grep -h '^totals:' "$dir"/callgrind.out.*-01 | awk '{ sum += $2 } END { printf "%.0f", sum }')
echo "logs $mode, $path: $((total / requests)) instructions per request, $((main / requests)) on the main thread (statuses:$statuses)"
