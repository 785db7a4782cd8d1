#!/usr/bin/env bash
# rss-catchup.sh — peak RSS of `stb run` alone, in its own process, catching up with a backlog.
#
#   scripts/rss-catchup.sh [BUDGET...]      e.g. scripts/rss-catchup.sh 256MiB 512MiB
#   AGENT=globalhub ROUNDS=26 scripts/rss-catchup.sh 512MiB
#
# Starts an embedded broker on a free port with a temporary data directory, publishes the
# catch-up backlog of `stb bench` (1,000 hubs × 240 rounds, about 1,000,000 messages) with
# `stb simulate`, then for each budget runs `stb run --max-buffered-bytes BUDGET` on a fresh
# database under /usr/bin/time until the stored offsets reach the end of the backlog, stops it
# with SIGTERM and prints its maximum resident set size, then verifies the database.
# With AGENT=globalhub the backlog is the global-hub agents' (`stb bench --agent globalhub
# --scenario catch-up`: a topic per hub, ROUNDS rounds, 26 by default, ~186,000 messages).
# `stb bench` reports RSS in its own process, where the ceilings that ran before leave memory
# behind; this measures the bridge alone. Needs bin/stb (make build), PostgreSQL on
# 127.0.0.1:5432 (make postgres) and /usr/bin/time (Debian's `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
STB=${STB:-./bin/stb}
PGURL=${STB_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
budgets=("${@:-256MiB}")
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time: apt-get install -y time" >&2; exit 1; }

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$STB" kafka --port "$port" --data-dir "$dir/kafka" --topics status --partitions 8 --log-level warn >"$dir/kafka.log" 2>&1 &
kafka=$!
trap 'kill $kafka 2>/dev/null; wait $kafka 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1
topics=status
if [[ ${AGENT:-stb} == globalhub ]]; then
	topics='^gh-status\..*'
	"$STB" simulate --kafka-brokers "127.0.0.1:$port" --agent globalhub --hubs 1000 --clusters 10 \
		--generations "${ROUNDS:-26}" --expected "$dir/expected.json" 2>/dev/null
else
	"$STB" simulate --kafka-brokers "127.0.0.1:$port" --hubs 1000 --clusters 10 --generations 240 \
		--restart-probability -1 --expected "$dir/expected.json" 2>/dev/null
fi
total=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['messages'])" "$dir/expected.json")

for budget in "${budgets[@]}"; do
	db="stb_rss_$(tr -dc 'a-z0-9' <<<"$budget")"
	psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" 2>/dev/null
	url="${PGURL%/*}/$db?sslmode=disable"
	start=$(date +%s.%N)
	/usr/bin/time -v "$STB" run --kafka-brokers "127.0.0.1:$port" --kafka-group-id "$db" --kafka-topics "$topics" --database-url "$url" \
		--http-addr '' --max-buffered-bytes "$budget" --commit-interval 1s --log-level warn 2>"$dir/run.txt" &
	run=$!
	until [[ $(psql -At "$url" -c "SELECT coalesce(sum((payload->>'offset')::bigint), 0) FROM status.transport" 2>/dev/null || echo 0) -ge $total ]]; do
		sleep 0.2
	done
	took=$(echo "$(date +%s.%N) - $start" | bc)
	pkill -TERM -f "^$STB run .*--kafka-group-id $db " || true
	wait $run || true
	rss=$(awk '/Maximum resident/ {print $NF}' "$dir/run.txt")
	printf 'budget %s: caught up with %d messages in %.1f s; peak RSS %.1f MiB (target: at most the budget + 128 MiB)\n' \
		"$budget" "$total" "$took" "$(echo "$rss / 1024" | bc -l)"
	"$STB" verify --database-url "$url" --expected "$dir/expected.json" | tail -1
	psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" 2>/dev/null
done
