#!/usr/bin/env bash
# Instructions per request of the service, counted by callgrind: a figure a busy host does not change,
# unlike req/s or CPU time (docs/benchmarks/tuning.md, "Counted instructions").
#
#   bash bench/count-instructions.sh on|off|fastify|bare [requests] [path]
#
# on: request logs as npm start writes them (info); off: LOG_LEVEL=warn; fastify and bare: the bench's
# baselines, the minimal Fastify app and bare node:http (bench/fastify-baseline-server.ts,
# baseline-server.ts), answering what the service answered, recorded first as the bench records it
# (path /v1/pets/<id> or a list path). 10,000 pets seeded, 50,000
# requests of warm-up (not counted; WARMUP=n to change), then `requests` (3,000) counted, 8 at a time, load
# shedding off (a process under callgrind runs about 50 times slower, which it would read as overload).
# The warm-up lets V8's optimizing compiler reach the request path, as it has in any service serving for
# a minute: after 2,000 requests the code counted was still the baseline compilers' (195k instructions
# per request then, 123k once optimized). Printed: all threads, and the main thread alone (the garbage
# collector's and compiler's helper threads vary most from run to run). With CACHE_SIM=1, callgrind also
# simulates the caches and branch prediction and prints the misses per request and valgrind's estimate of
# cycles, Ir + 10 × (L1 misses + mispredicted branches) + 100 × last-level misses: what instructions alone
# do not show of time. LL=bytes,ways,line sets the last level simulated (valgrind takes the host's L3).
# UNAUTHORIZED=1 sends an unknown key instead, so every counted request is a 401. CREATE=1 sends the
# bench's create instead (POST /v1/pets, its body; `path` is not used): durable creates, in batches of up
# to 8. COUNT_PORT sets the service's port (two counts at once need two); OUT=dir keeps callgrind's files.
# Needs valgrind and curl (Debian: apt-get install valgrind curl).
set -euo pipefail
mode=${1:?on or off}
requests=${2:-3000}
path=${3:-/v1/pets/5000}
root=$(cd "$(dirname "$0")/.." && pwd)
node="$root/node_modules/.bin/node"
body=()
if [ -n "${CREATE:-}" ]; then
  # The bench's own create body, read from the scenarios rather than written again here.
  new_pet=$("$node" --input-type=module -e \
    "import { NEW_PET_BODY } from '$root/bench/scenarios.ts'; process.stdout.write(NEW_PET_BODY)")
  path=/v1/pets
  body=(-H 'content-type: application/json' --data-raw "$new_pet")
fi
dir=$(mktemp -d)
[ -n "${OUT:-}" ] && mkdir -p "$OUT"
service=
trap '[ -n "$service" ] && kill -KILL "$service" 2> /dev/null; rm -rf "$dir"' EXIT
port=${COUNT_PORT:-18123}
random_key() { printf 'psk_%s' "$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=' | head -c 43)"; }
# The service's key, and a well-formed one it does not know (the baselines record their 401 for it).
key=$(random_key)
wrong=$(random_key)
sent_key=$key
[ -n "${UNAUTHORIZED:-}" ] && sent_key=$wrong
export API_KEYS="bench:$key" DATABASE_URL="sqlite:$dir/pets.db" PORT=$port HOST=127.0.0.1 METRICS_PORT=0 \
  RATE_LIMIT_PER_MINUTE=10000000 MAX_EVENT_LOOP_DELAY_MS=0
level=info
[ "$mode" = off ] && level=warn
"$node" "$root/bin/petstore.js" seed --count 10000 > /dev/null
callgrind=(valgrind --tool=callgrind --smc-check=all-non-file --instr-atstart=no --separate-threads=yes
  --callgrind-out-file="$dir/callgrind.out")
[ -n "${CACHE_SIM:-}" ] && callgrind+=(--cache-sim=yes --branch-sim=yes ${LL:+"--LL=$LL"})
# Waits until `url` answers (300 s at most: a process under callgrind starts slowly).
await_ready() {
  for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 1; done
  echo "no answer from $1 within 300 s: $(tail -3 "$dir/valgrind.log" 2> /dev/null)" >&2
  return 1
}
if [ "$mode" = fastify ] || [ "$mode" = bare ]; then
  baseline=$root/bench/fastify-baseline-server.ts
  [ "$mode" = bare ] && baseline=$root/bench/baseline-server.ts
  LOG_LEVEL=warn "$node" "$root/bin/petstore.js" serve > /dev/null 2>&1 &
  service=$!
  await_ready "http://127.0.0.1:$port/healthz"
  id=$(printf '%s' "$path" | sed -n 's|^/v1/pets/\([0-9][0-9]*\)$|\1|p')
  FIXTURE="$dir/fixture.json" ORIGIN="http://127.0.0.1:$port" KEY="$key" WRONG="$wrong" ID="$id" \
    "$node" --input-type=module -e "
      import { writeFileSync } from 'node:fs'
      import { recordFixture } from '$root/bench/baseline-fixture.ts'
      const { FIXTURE, ORIGIN, KEY, WRONG, ID } = process.env
      const context = { apiKey: KEY, wrongKey: WRONG, petIds: ID ? [BigInt(ID)] : [] }
      writeFileSync(FIXTURE, JSON.stringify(await recordFixture(ORIGIN, context, 10000)))"
  kill -TERM "$service"
  wait "$service" || true
  BENCH_API_KEY=$key "${callgrind[@]}" "$node" "$baseline" "$dir/fixture.json" \
    > "$dir/stdout.log" 2> "$dir/valgrind.log" &
  service=$!
  for _ in $(seq 1 300); do grep -q '^listening' "$dir/stdout.log" 2> /dev/null && break; sleep 1; done
  port=$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$dir/stdout.log")
  [ -n "$port" ] || { echo "the $mode baseline did not start: $(tail -3 "$dir/valgrind.log")" >&2; exit 1; }
else
  LOG_LEVEL=$level "${callgrind[@]}" "$node" --max-semi-space-size=16 "$root/bin/petstore.js" serve \
    > "$dir/stdout.log" 2> "$dir/valgrind.log" &
  service=$!
  await_ready "http://127.0.0.1:$port/healthz"
fi

# curl reads its URLs from a config file: one process sends them all, 8 at a time.
send() {
  for _ in $(seq 1 "$1"); do printf 'url = "http://127.0.0.1:%s%s"\noutput = /dev/null\n' "$port" "$path"; done \
    > "$dir/urls"
  curl -s --no-progress-meter -w '%{http_code}\n' -H "Authorization: Bearer $sent_key" ${body[@]+"${body[@]}"} -K "$dir/urls" \
    --parallel --parallel-max 8
}
send "${WARMUP:-50000}" > /dev/null
callgrind_control -i on "$service" > /dev/null 2>&1
statuses=$(send "$requests" | sort | uniq -c | tr -s ' \n' ' ')
callgrind_control -i off "$service" > /dev/null 2>&1
callgrind_control -d "$service" > /dev/null 2>&1
kill -TERM "$service"
wait "$service" || true
service=
[ -n "${OUT:-}" ] && cp "$dir"/callgrind.out.* "$OUT"/
# The dump above holds the counted requests, a file per thread (…-01 is the main thread); the dump at exit
# (callgrind.out) counts nothing more.
total=$(grep -h '^totals:' "$dir"/callgrind.out.* | awk '{ sum += $2 } END { printf "%.0f", sum }')
main=$(grep -h '^totals:' "$dir"/callgrind.out.*-01 | awk '{ sum += $2 } END { printf "%.0f", sum }')
label="logs $mode"
[ "$mode" = fastify ] && label="minimal Fastify app"
[ "$mode" = bare ] && label="bare node:http"
echo "$label, $path: $((total / requests)) instructions per request, $((main / requests)) on the main thread (statuses:$statuses)"
if [ -n "${CACHE_SIM:-}" ]; then
  # Each file's events line names its columns (Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim):
  # summed by name.
  for scope in all main; do
    files=("$dir"/callgrind.out.*)
    [ "$scope" = main ] && files=("$dir"/callgrind.out.*-01)
    awk -v requests="$requests" -v scope="$scope" '
      /^events:/ { for (i = 2; i <= NF; i++) name[i] = $i }
      /^totals:/ { for (i = 2; i <= NF; i++) sum[name[i]] += $i }
      END {
        l1 = sum["I1mr"] + sum["D1mr"] + sum["D1mw"]; ll = sum["ILmr"] + sum["DLmr"] + sum["DLmw"]
        bm = sum["Bcm"] + sum["Bim"]
        printf "  %s: per request %.0f L1 misses (code %.0f, data read %.0f, written %.0f), %.0f last-level misses, %.0f mispredicted branches; estimated cycles %.0f\n",
          scope == "all" ? "all threads" : "main thread", l1 / requests, sum["I1mr"] / requests,
          sum["D1mr"] / requests, sum["D1mw"] / requests, ll / requests, bm / requests,
          (sum["Ir"] + 10 * (l1 + bm) + 100 * ll) / requests
      }' "${files[@]}"
  done
fi
