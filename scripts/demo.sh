#!/usr/bin/env bash
# The xroce demo: two network namespaces joined by a veth pair, an RC queue
# pair between them, and every operation once: SENDs (1 B to 1 MiB, with
# immediate), RDMA WRITE (with immediate), READ, compare-and-swap,
# fetch-and-add and the masked atomics, each verified by the side that can
# see its result; then memory windows (bound, written inside and one byte
# outside, invalidated, written again), over a second queue pair too, since
# a refused access ends its pair. Installs what is missing and builds first
# (into $BUILD, default build). Needs root. Exits 0 when every operation
# succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh: needs root (namespaces, XDP): run it as root" >&2
	exit 1
fi
scripts/install-deps.sh
export BUILD=${BUILD:-build}
make -s BUILD="$BUILD" all

demo=$BUILD/xroce-demo
source scripts/netns.sh

server_pid=""
server_log=$(mktemp /tmp/xroce-demo-server.XXXXXX)
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	netns_cleanup
	rm -f "$server_log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_pair dmo
echo "namespaces $NETNS_A ($VETH_A, $ADDR_A) and $NETNS_B ($VETH_B, $ADDR_B)"

netns_exec "$NETNS_A" timeout 90 "$demo" server "$VETH_A" >"$server_log" 2>&1 &
server_pid=$!

echo "--- client ($NETNS_B)"
client_status=0
netns_exec "$NETNS_B" timeout 90 "$demo" client "$VETH_B" "$ADDR_A" || client_status=$?

server_status=0
wait "$server_pid" || server_status=$?
server_pid=""
echo "--- server ($NETNS_A)"
cat "$server_log"

if [ "$client_status" -eq 0 ] && [ "$server_status" -eq 0 ]; then
	echo "demo: all operations succeeded"
	exit 0
fi
echo "demo: FAILED (client exit $client_status, server exit $server_status)"
exit 1
