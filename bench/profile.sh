#!/usr/bin/env bash
# Profiles xroce-perf on one veth pair, both processes at once:
#   - perf record -g of server and client during write_lat 8 B and
#     write_bw 64 KiB (path MTU 1024), then each side's top functions
#     (self time, share of samples);
#   - strace -c -f of both during the same runs: the syscalls, counted;
#   - the engines' own counters after each run (xroce stats).
# Output goes to PROFILE_DIR (default /tmp/xroce-profile): NAME.{server,client}.top,
# NAME.{server,client}.syscalls, NAME.{server,client}.stats and the raw
# perf.data files; a summary is printed. Needs root.
#   PROFILE_ITERS  write_lat iterations (default 20000)
#   PROFILE_SECONDS  write_bw duration (default 3)
# Run through `make profile`, which builds first.
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
out=${PROFILE_DIR:-/tmp/xroce-profile}
iters=${PROFILE_ITERS:-20000}
seconds=${PROFILE_SECONDS:-3}
if [ "$(id -u)" -ne 0 ]; then
	echo "profile: needs root (namespaces, XDP, perf)" >&2
	exit 1
fi
for tool in perf strace; do
	command -v "$tool" >/dev/null || {
		echo "profile: $tool not found (scripts/install-deps.sh installs it)" >&2
		exit 1
	}
done

source scripts/netns.sh
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	netns_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$out"
netns_pair prf
netns_attach "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B" || exit 1
perf_bin=$(realpath "$BUILD/xroce-perf")

# run_pair NAME WRAPPER TEST ARGS...: server in A and client in B, each under
# the command WRAPPER sets into wrap (given the side's output prefix), then
# both engines' counters.
run_pair() {
	local name=$1 wrapper=$2 test=$3 status=0
	shift 3
	$wrapper "$out/$name.server"
	nsenter --net="/var/run/netns/$NETNS_A" timeout 120 \
		"${wrap[@]}" "$perf_bin" "$test" -d "$VETH_A" "$@" >"$out/$name.server.log" 2>&1 &
	server_pid=$!
	netns_wait_tcp_listen "$NETNS_A" 18515 || status=1
	$wrapper "$out/$name.client"
	[ $status -ne 0 ] || netns_exec "$NETNS_B" timeout 120 \
		"${wrap[@]}" "$perf_bin" "$test" -d "$VETH_B" "$@" "$ADDR_A" \
		>"$out/$name.client.log" 2>&1 || status=1
	wait "$server_pid" || status=1
	server_pid=
	netns_exec "$NETNS_A" "$BUILD/xroce" stats "$VETH_A" >"$out/$name.server.stats"
	netns_exec "$NETNS_B" "$BUILD/xroce" stats "$VETH_B" >"$out/$name.client.stats"
	[ $status -eq 0 ] || {
		echo "profile: $name failed"
		tail -n 5 "$out/$name.server.log" "$out/$name.client.log"
	}
	return $status
}

perf_wrapper() { wrap=(perf record -q -g -o "$1.data" --); }
strace_wrapper() { wrap=(strace -c -f -o "$1.syscalls"); }

# The runs: name, then xroce-perf's arguments.
runs=(
	"write_lat_8|write_lat -s 8 -n $iters -m 1024"
	"write_bw_64k|write_bw -s 65536 -D $seconds -m 1024"
)
for run in "${runs[@]}"; do
	name=${run%%|*}
	read -r -a args <<<"${run#*|}"
	echo "profile: $name under perf record"
	run_pair "$name" perf_wrapper "${args[@]}" || exit 1
	for side in server client; do
		perf report -q -i "$out/$name.$side.data" --no-children --sort symbol \
			--percent-limit 1 --stdio 2>/dev/null |
			grep -E '^ +[0-9.]+%' >"$out/$name.$side.top" || true
	done
	cp "$out/$name.client.log" "$out/$name.client.perf.log"
	echo "profile: $name under strace"
	run_pair "$name" strace_wrapper "${args[@]}" || exit 1
done

for run in "${runs[@]}"; do
	name=${run%%|*}
	for side in server client; do
		echo
		echo "== $name, $side: top functions (self, % of samples)"
		head -n 15 "$out/$name.$side.top"
		echo "== $name, $side: syscalls (strace -c)"
		sed -n '3,12p' "$out/$name.$side.syscalls"
	done
	echo "== $name: client's result line (under perf)"
	grep -E '^ *[0-9]+ +[0-9]+ ' "$out/$name.client.perf.log" | tail -n 1
done
echo
echo "profile: everything is in $out"
