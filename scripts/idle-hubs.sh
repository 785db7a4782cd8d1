#!/usr/bin/env bash
# Memory of many hubs that send once and go quiet (BENCHMARKS.md, "Idle hubs
# leave memory"): an embedded broker, HUBS simulated hubs sending one round
# (a heartbeat and their clusters, no policies), and the bridge with
# --unit-idle-timeout IDLE. Prints the bridge's units, dormant hubs,
# evictions and RSS when the backlog is written and again after the idle
# timeout (IDLE_HUBS_HEAP=FILE: heap profiles into FILE.written then FILE). Needs bin/stb (make build) and the local PostgreSQL (make db).
#
#   scripts/idle-hubs.sh [HUBS] [IDLE]       defaults: 200000 30s
set -euo pipefail
HUBS=${1:-200000}
IDLE=${2:-30s}
PORT=${IDLE_HUBS_KAFKA_PORT:-19392}
HTTP=127.0.0.1:${IDLE_HUBS_HTTP_PORT:-19380}
DB=stb_idle_hubs
BASE=${STB_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
URL=${BASE/\/postgres\?/\/$DB?}
dir=$(mktemp -d)
cleanup() { kill "${bridge:-}" "${kafka:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

psql "$BASE" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
./bin/stb kafka --port "$PORT" --partitions 8 --data-dir "$dir/kafka" --log-level warn >"$dir/kafka.log" 2>&1 &
kafka=$!
sleep 1
echo "publishing one round of $HUBS hubs…"
./bin/stb simulate --kafka-brokers "127.0.0.1:$PORT" --hubs "$HUBS" --generations 1 --clusters 1 --policies -1 \
	--expected "$dir/expected.json" | tail -1
ADMIN=127.0.0.1:${IDLE_HUBS_ADMIN_PORT:-19381}
./bin/stb run --kafka-brokers "127.0.0.1:$PORT" --database-url "$URL" --http-addr "$HTTP" --admin-addr "$ADMIN" \
	--unit-idle-timeout "$IDLE" --hub-inactive-after 0 --log-format console --log-level warn >"$dir/bridge.log" 2>&1 &
bridge=$!

metric() { curl -s "http://$HTTP/metrics" | awk -v m="$1" '$1 == m { printf "%d", $2 }'; }
show() {
	printf '%-28s units %7s  dormant %7s  evicted %7s  rss %5d MiB  go heap in use %4d MiB\n' "$1" \
		"$(metric stb_conflation_units)" "$(metric stb_conflation_dormant_hubs)" \
		"$(metric stb_conflation_units_evicted_total)" "$(( $(metric process_resident_memory_bytes) >> 20 ))" \
		"$(( $(metric go_memstats_heap_inuse_bytes) >> 20 ))"
}
start=$(date +%s)
until ./bin/stb verify --database-url "$URL" --expected "$dir/expected.json" >/dev/null 2>&1; do
	sleep 2
	kill -0 $bridge || { cat "$dir/bridge.log"; exit 1; }
done
show "written ($(( $(date +%s) - start ))s)"
if [ -n "${IDLE_HUBS_HEAP:-}" ]; then
	# After a collection: what every unit holds once written, before eviction.
	curl -s "http://$ADMIN/debug/pprof/heap?gc=1" >"$IDLE_HUBS_HEAP.written" && echo "heap profile: $IDLE_HUBS_HEAP.written"
fi
peak=$(awk '/VmHWM/ {print int($2/1024)}' "/proc/$bridge/status")
echo "peak rss so far: $peak MiB"
secs=${IDLE%s}
sleep $(( secs + 5 ))
# Evicted units' memory goes back to the system at most once a minute
# (bridge.releaseEvery): sample for two minutes after the timeout.
for t in 0 30 60 90 120; do
	[ "$t" = 0 ] || sleep 30
	show "idle timeout + ${t}s"
done
if [ -n "${IDLE_HUBS_HEAP:-}" ]; then
	curl -s "http://$ADMIN/debug/pprof/heap" >"$IDLE_HUBS_HEAP" && echo "heap profile: $IDLE_HUBS_HEAP"
fi
