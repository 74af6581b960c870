#!/usr/bin/env bash
# xroce's libibverbs.so.1 against rdma-core's ABI:
#   - SONAME libibverbs.so.1; every symbol it exports exists in Debian's
#     libibverbs.so.1 at the same default version, and it exports nothing
#     else (libxroce, linked in, stays hidden);
#   - every versioned libibverbs symbol that Debian's ibv_devices,
#     ibv_devinfo and ibv_rc_pingpong import is there at that version;
#   - tests/ibverbs/layout/layout.c, built against <infiniband/verbs.h> and
#     Debian's -libverbs as any application is, checks the struct offsets
#     the inline functions use (compile time) and runs under xroce-run on an
#     attached device, checking that the objects the library hands out are
#     where those inline functions look. The same binary on Debian's
#     libibverbs (no RDMA device here) must fail: the check depends on xroce's.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
shim=$BUILD/ibverbs/libibverbs.so.1
run=$BUILD/xroce-run
system=$(ldconfig -p | awk '$1 == "libibverbs.so.1" && /x86-64|64bit/ { print $NF; exit }')

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_ibverbs_abi "$shim" "$run" "$BUILD/xroce"
[ -n "$system" ] && [ -f "$system" ] || fail "Debian's libibverbs.so.1 is not installed (libibverbs1)"

soname=$(readelf -d "$shim" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libibverbs.so.1 ] || fail "SONAME is '$soname'"

# NAME@@VERSION of each defined, versioned function or object.
exports() {
	nm -D --defined-only "$1" | awk '$2 != "A" && $3 ~ /@@/ { print $3 }' | sort
}
exports "$shim" >"$logdir/shim"
exports "$system" >"$logdir/system"
unversioned=$(nm -D --defined-only "$shim" | awk '$2 != "A" && $3 !~ /@/ { print $3 }')
[ -z "$unversioned" ] || fail "exported without a version: $unversioned"
extra=$(comm -23 "$logdir/shim" "$logdir/system")
[ -z "$extra" ] || fail "exported, but not so in Debian's libibverbs:"$'\n'"$extra"
[ "$(wc -l <"$logdir/shim")" -ge 60 ] || fail "only $(wc -l <"$logdir/shim") symbols exported"
echo "ok   $(wc -l <"$logdir/shim") symbols, each at rdma-core's default version"

for prog in ibv_devices ibv_devinfo ibv_rc_pingpong; do
	bin=$(command -v "$prog") || fail "$prog is missing (ibverbs-utils)"
	objdump -T "$bin" | awk '$3 == "*UND*" && $(NF-1) ~ /^\(IBVERBS_/ {
		v = $(NF-1); gsub(/[()]/, "", v); print $NF "@@" v }' | sort >"$logdir/$prog"
	[ -s "$logdir/$prog" ] || fail "$prog imports no versioned libibverbs symbol"
	missing=$(comm -23 "$logdir/$prog" "$logdir/shim")
	[ -z "$missing" ] || fail "$prog needs what is not exported:"$'\n'"$missing"
	echo "ok   $prog: its $(wc -l <"$logdir/$prog") libibverbs symbols resolve at their versions"
done

layout=$logdir/layout
cc -std=gnu11 -Wall -Wextra -Werror -o "$layout" tests/ibverbs/layout/layout.c -libverbs ||
	fail "layout.c does not build against <infiniband/verbs.h>"
ldd "$layout" | grep -q "libibverbs.so.1 => $(readlink -f "$system")\|libibverbs.so.1 => $system" ||
	fail "layout is not linked against Debian's libibverbs: $(ldd "$layout")"

netns_pair iva "$(e2e_subnet)" || fail "could not create the namespaces"
netns_attach "$NETNS_A:$VETH_A" || fail "xroce attach $VETH_A failed"
netns_exec "$NETNS_A" timeout 60 "$run" "$layout" "xroce_$VETH_A" >"$logdir/out" 2>&1 ||
	{ cat "$logdir/out"; fail "layout under xroce-run failed"; }
grep -E '^layout: ok: [0-9]+ checks$' "$logdir/out" || fail "no summary: $(cat "$logdir/out")"
! netns_exec "$NETNS_A" timeout 60 "$layout" "xroce_$VETH_A" >"$logdir/plain" 2>&1 ||
	fail "layout passed on Debian's libibverbs too: it checks nothing of xroce's"
echo "ok   on Debian's libibverbs it fails: $(head -n 1 "$logdir/plain")"
echo "test_ibverbs_abi: PASS"
