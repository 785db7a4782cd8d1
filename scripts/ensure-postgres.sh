#!/usr/bin/env bash
# ensure-postgres.sh — make a PostgreSQL server reachable at $STB_TEST_DATABASE_URL.
#
# Used by `make postgres` (and so by `make test` and `make demo`); see docs/design.md, "Testing": the database tests
# must run, never be skipped, so this script either leaves a working server behind or fails loudly.
#
# Steps, each skipped when it is not needed (the script is idempotent; a second run is a no-op):
#   1. If the URL already answers `select 1`, stop here.
#   2. The server must be local (127.0.0.1, localhost or ::1); a remote URL that does not answer is an error.
#   3. Install Debian's `postgresql` package if no server binaries are installed (apt-get; sudo if not root).
#   4. Pick the cluster listening on the URL's port, or create `<newest version> main` on that port.
#   5. Make it listen on localhost, start it with pg_ctlcluster and wait until it is ready
#      (STB_PG_WAIT_SECONDS, default 60), printing the log tail if it does not come up.
#   6. If connecting fails with an authentication error, add `trust` rules for the URL's user from
#      127.0.0.1/32 and ::1/128 at the top of pg_hba.conf and reload.
#
# Environment:
#   STB_TEST_DATABASE_URL  default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
#   STB_PG_WAIT_SECONDS    how long to wait for the server to accept connections (default 60)
set -euo pipefail

readonly DEFAULT_URL='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
readonly URL="${STB_TEST_DATABASE_URL:-$DEFAULT_URL}"
readonly WAIT_SECONDS="${STB_PG_WAIT_SECONDS:-60}"
readonly HBA_MARKER='# added by stb scripts/ensure-postgres.sh'

log() { printf 'ensure-postgres: %s\n' "$*" >&2; }
die() {
	printf 'ensure-postgres: ERROR: %s\n' "$*" >&2
	exit 1
}

# as_root runs a command as root: directly when we are root, else through sudo.
as_root() {
	if [[ ${EUID} -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run '$*' (not root and sudo is not installed)"
	fi
}

# --- URL ------------------------------------------------------------------------------------------
# postgres[ql]://[user[:password]@][host][:port][/db][?params]; IPv6 hosts in brackets.
parse_url() {
	local rest userinfo hostport
	[[ ${URL} =~ ^postgres(ql)?://(.*)$ ]] || die "STB_TEST_DATABASE_URL is not a postgres:// URL: ${URL}"
	rest="${BASH_REMATCH[2]}"
	rest="${rest%%[/?]*}"
	if [[ ${rest} == *@* ]]; then
		userinfo="${rest%@*}"
		hostport="${rest##*@}"
	else
		userinfo=""
		hostport="${rest}"
	fi
	PG_USER="${userinfo%%:*}"
	PG_USER="${PG_USER:-postgres}"
	if [[ ${hostport} =~ ^\[([^]]*)\](:([0-9]+))?$ ]]; then
		PG_HOST="${BASH_REMATCH[1]}"
		PG_PORT="${BASH_REMATCH[3]}"
	elif [[ ${hostport} =~ ^([^:]*)(:([0-9]+))?$ ]]; then
		PG_HOST="${BASH_REMATCH[1]}"
		PG_PORT="${BASH_REMATCH[3]}"
	else
		die "cannot parse host and port from STB_TEST_DATABASE_URL: ${URL}"
	fi
	PG_HOST="${PG_HOST:-127.0.0.1}"
	PG_PORT="${PG_PORT:-5432}"
}

is_local_host() {
	case "${PG_HOST}" in
	127.0.0.1 | localhost | ::1 | /*) return 0 ;; # /* is a Unix socket directory
	*) return 1 ;;
	esac
}

# --- Tools ----------------------------------------------------------------------------------------
# pg_bindirs prints Debian's versioned PostgreSQL bin directories, newest version first.
pg_bindirs() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		if [[ -d ${d} ]]; then echo "${d}"; fi
	done | sort -t/ -k5,5 -V -r
}

# newest_pg_bindir prints the newest bin directory that holds a server, else the newest with client
# tools only (postgresql-client without a server), else nothing.
newest_pg_bindir() {
	local d
	while read -r d; do
		if [[ -x ${d}/postgres ]]; then
			echo "${d}"
			return 0
		fi
	done < <(pg_bindirs)
	pg_bindirs | head -n1 || true
}

# ensure_client_on_path adds Debian's versioned bin directory when pg_isready/psql are not on PATH.
ensure_client_on_path() {
	local d
	if command -v pg_isready >/dev/null 2>&1 && command -v psql >/dev/null 2>&1; then
		return 0
	fi
	d="$(newest_pg_bindir)"
	if [[ -n ${d} ]]; then
		PATH="${PATH}:${d}"
		export PATH
	fi
}

server_installed() {
	command -v pg_ctlcluster >/dev/null 2>&1 &&
		command -v pg_lsclusters >/dev/null 2>&1 &&
		compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null
}

install_postgres() {
	command -v apt-get >/dev/null 2>&1 ||
		die "PostgreSQL is not installed and apt-get is not available; install PostgreSQL or point STB_TEST_DATABASE_URL at a running server"
	log "PostgreSQL server not installed; installing Debian's postgresql package (apt-get)"
	as_root apt-get update >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >&2
	server_installed || die "apt-get install postgresql finished, but pg_ctlcluster or the server binaries are still missing"
}

# --- Probes ---------------------------------------------------------------------------------------
# server_up: the server accepts connections (any authentication outcome).
server_up() {
	local out
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -t 3 -d "${URL}" >/dev/null 2>&1
		return
	fi
	# No pg_isready: the server is up if psql got past connecting (a login error still means "up").
	out="$(psql_select1)" && return 0
	! grep -Eqi 'could not connect|connection refused|no such file|timeout expired|starting up|shutting down' <<<"${out}"
}

# psql_select1 runs `select 1` at the URL; psql's stderr is left on stdout for the caller to inspect.
psql_select1() {
	PGCONNECT_TIMEOUT=5 psql "${URL}" -w -X -A -t -q -c 'select 1' 2>&1
}

# usable: a client can log in and run a query (falls back to pg_isready when psql is missing).
LAST_PSQL_OUTPUT=""
usable() {
	if command -v psql >/dev/null 2>&1; then
		if LAST_PSQL_OUTPUT="$(psql_select1)" && [[ ${LAST_PSQL_OUTPUT} == 1 ]]; then
			return 0
		fi
		return 1
	fi
	server_up
}

is_auth_error() {
	grep -Eqi 'authentication failed|no pg_hba\.conf entry|fe_sendauth|password|peer authentication|ident authentication' <<<"$1"
}

# --- Cluster --------------------------------------------------------------------------------------
# Selected cluster, filled in by select_cluster.
CL_VER=""
CL_NAME=""
CL_PORT=""
CL_STATUS=""
CL_LOG=""

# select_cluster picks the cluster on PG_PORT with installed binaries; returns 1 when there is none.
select_cluster() {
	local ver name port status _owner _datadir logfile
	CL_VER=""
	while read -r ver name port status _owner _datadir logfile; do
		[[ -n ${ver} ]] || continue
		[[ -x /usr/lib/postgresql/${ver}/bin/postgres ]] || continue
		if [[ ${port} == "${PG_PORT}" ]]; then
			CL_VER="${ver}" CL_NAME="${name}" CL_PORT="${port}" CL_STATUS="${status}"
			CL_LOG="${logfile}"
			[[ ${CL_LOG} == /* ]] || CL_LOG="/var/log/postgresql/postgresql-${ver}-${name}.log"
			return 0
		fi
	done < <(pg_lsclusters -h 2>/dev/null || true)
	return 1
}

# list_clusters prints the existing clusters, for error messages.
list_clusters() { pg_lsclusters 2>&1 | sed 's/^/    /' >&2 || true; }

create_cluster() {
	local bindir ver
	bindir="$(newest_pg_bindir)"
	ver="$(basename "$(dirname "${bindir}")")"
	[[ -n ${ver} && -x ${bindir}/postgres ]] || die "no PostgreSQL server binaries under /usr/lib/postgresql"
	if pg_lsclusters -h 2>/dev/null | awk -v v="${ver}" '$1 == v && $2 == "main" { found = 1 } END { exit !found }'; then
		log "clusters present, but none on port ${PG_PORT}:"
		list_clusters
		die "cluster ${ver}/main exists on another port; set STB_TEST_DATABASE_URL to its port, or move it with: pg_conftool ${ver} main set port ${PG_PORT}"
	fi
	log "creating cluster ${ver}/main on port ${PG_PORT}"
	as_root pg_createcluster -p "${PG_PORT}" "${ver}" main >&2
	select_cluster || die "pg_createcluster ${ver} main succeeded, but no cluster is listed on port ${PG_PORT}"
}

# ensure_listen_localhost makes sure listen_addresses covers the loopback interface.
# Returns 0 when the configuration was changed (a running server would need a restart).
ensure_listen_localhost() {
	local cur
	cur="$(pg_conftool -s "${CL_VER}" "${CL_NAME}" show listen_addresses 2>/dev/null || true)"
	cur="${cur//\'/}"
	case ",${cur// /}," in
	,, | *,localhost,* | *,\*,* | *,127.0.0.1,* | *,0.0.0.0,*)
		return 1 # unset means the default, 'localhost'
		;;
	esac
	log "listen_addresses is '${cur}'; setting it to 'localhost'"
	as_root pg_conftool "${CL_VER}" "${CL_NAME}" set listen_addresses localhost
	return 0
}

ctl() { as_root pg_ctlcluster --skip-systemctl-redirect "${CL_VER}" "${CL_NAME}" "$@"; }

print_log_tail() {
	log "pg_lsclusters:"
	list_clusters
	if [[ -r ${CL_LOG} ]]; then
		log "last 40 lines of ${CL_LOG}:"
		tail -n 40 "${CL_LOG}" | sed 's/^/    /' >&2
	else
		log "log file ${CL_LOG} is not readable"
	fi
}

start_cluster() {
	if [[ ${CL_STATUS} == online* ]]; then
		return 0
	fi
	log "starting cluster ${CL_VER}/${CL_NAME} (status: ${CL_STATUS})"
	if ! ctl start >&2; then
		print_log_tail
		die "pg_ctlcluster ${CL_VER} ${CL_NAME} start failed"
	fi
}

wait_ready() {
	local deadline=$((SECONDS + WAIT_SECONDS))
	log "waiting up to ${WAIT_SECONDS}s for ${PG_HOST}:${PG_PORT} to accept connections"
	until server_up; do
		if ((SECONDS >= deadline)); then
			print_log_tail
			die "PostgreSQL at ${PG_HOST}:${PG_PORT} did not become ready within ${WAIT_SECONDS}s"
		fi
		sleep 1
	done
}

# ensure_trust_auth adds trust rules for PG_USER over loopback TCP at the top of pg_hba.conf (first
# match wins) and reloads. Called only after a connection failed with an authentication error.
ensure_trust_auth() {
	local hba tmp
	hba="$(pg_conftool -s "${CL_VER}" "${CL_NAME}" show hba_file 2>/dev/null || true)"
	hba="${hba//\'/}"
	hba="${hba:-/etc/postgresql/${CL_VER}/${CL_NAME}/pg_hba.conf}"
	[[ -f ${hba} ]] || die "pg_hba.conf not found at ${hba}"
	if grep -qF "${HBA_MARKER} (user ${PG_USER})" "${hba}"; then
		die "authentication still fails although ${hba} already trusts ${PG_USER} on loopback: ${LAST_PSQL_OUTPUT}"
	fi
	log "authentication failed (${LAST_PSQL_OUTPUT//$'\n'/ }); adding trust rules for ${PG_USER} from 127.0.0.1/32 and ::1/128 to ${hba}"
	tmp="$(mktemp)"
	{
		printf '%s\n' "${HBA_MARKER} (user ${PG_USER}): local test server, trust loopback TCP"
		printf 'host    all    %s    127.0.0.1/32    trust\n' "${PG_USER}"
		printf 'host    all    %s    ::1/128         trust\n' "${PG_USER}"
		cat "${hba}"
	} >"${tmp}"
	# cat > keeps the file's owner and mode.
	# shellcheck disable=SC2016 # $1 and $2 are expanded by the inner sh.
	as_root sh -c 'cat "$1" > "$2"' sh "${tmp}" "${hba}"
	rm -f "${tmp}"
	log "reloading cluster ${CL_VER}/${CL_NAME}"
	ctl reload >&2
	sleep 1
}

# --- Main -----------------------------------------------------------------------------------------
main() {
	parse_url
	ensure_client_on_path

	if usable; then
		log "PostgreSQL is ready at ${PG_HOST}:${PG_PORT} (user ${PG_USER})"
		return 0
	fi

	if ! is_local_host; then
		die "PostgreSQL at ${PG_HOST}:${PG_PORT} is not usable and is not local, so it cannot be started here: ${LAST_PSQL_OUTPUT:-not reachable}"
	fi

	if ! server_installed; then
		install_postgres
		ensure_client_on_path
	fi
	command -v psql >/dev/null 2>&1 || log "psql not found; checking readiness with pg_isready only"

	if ! select_cluster; then
		create_cluster
	fi
	log "using cluster ${CL_VER}/${CL_NAME} on port ${CL_PORT} (status: ${CL_STATUS})"

	if ensure_listen_localhost && [[ ${CL_STATUS} == online* ]]; then
		log "restarting cluster ${CL_VER}/${CL_NAME} to apply listen_addresses"
		ctl restart >&2 || {
			print_log_tail
			die "pg_ctlcluster ${CL_VER} ${CL_NAME} restart failed"
		}
	fi
	start_cluster
	wait_ready

	if ! usable; then
		if is_auth_error "${LAST_PSQL_OUTPUT}"; then
			ensure_trust_auth
		fi
		usable || die "PostgreSQL is up at ${PG_HOST}:${PG_PORT}, but 'select 1' as ${PG_USER} fails: ${LAST_PSQL_OUTPUT}"
	fi
	log "PostgreSQL is ready at ${PG_HOST}:${PG_PORT} (cluster ${CL_VER}/${CL_NAME}, user ${PG_USER})"
}

main "$@"
