#!/usr/bin/env bash
# xroce's libibverbs.so.1 against rdma-core's ABI:
#   - SONAME libibverbs.so.1; it exports exactly the versioned symbols of
#     Debian's libibverbs.so.1 (rdma-core 44): each default (NAME@@VERSION),
#     each compatibility version (NAME@VERSION: the IBVERBS_1.0 ABI) and the
#     IBVERBS_PRIVATE_34 interface providers bind, and nothing else
#     (libxroce, linked in, stays hidden) but the XROCE_RDMACM_PRIVATE
#     node xroce's librdmacm.so.1 binds: the RDMA CM (xr_rdma_*) and the
#     bridge to the objects behind verbs objects (xroce_ibv_*);
#   - (that every program and module binds what it needs at load time is
#     test_ibverbs_resolve's);
#   - tests/ibverbs/layout/layout.c, built against <infiniband/verbs.h> and
#     Debian's -libverbs as any application is, checks the struct offsets
#     the inline functions use (compile time) and runs under xroce-run on an
#     attached device, checking that the objects the library hands out are
#     where those inline functions look. The same binary on Debian's
#     libibverbs (no RDMA device here) must fail: the check depends on xroce's;
#   - tests/ibverbs/helpers/helpers.c: the device-free helpers librdmacm
#     and the tools call (kernel ABI conversions, sysfs) give what Debian's
#     give, the same binary passing on both;
#   - tests/ibverbs/providers/providers.c: Debian's libmlx5 and libefa,
#     loaded beside xroce's library as perftest loads them, answer "not this
#     device" for an xroce device.
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

# NAME@@VERSION or NAME@VERSION of each defined, versioned function or object.
exports() {
	nm -D --defined-only "$1" | awk '$2 != "A" && $3 ~ /@/ { print $3 }' | sort
}
exports "$shim" | grep -v '@@XROCE_RDMACM_PRIVATE$' >"$logdir/shim"
exports "$shim" | grep '@@XROCE_RDMACM_PRIVATE$' >"$logdir/private" ||
	fail "no XROCE_RDMACM_PRIVATE node for librdmacm.so.1"
stray=$(grep -vE '^(xr_rdma_|xroce_ibv_)' "$logdir/private")
[ -z "$stray" ] || fail "XROCE_RDMACM_PRIVATE exports more than the RDMA CM: $stray"
exports "$system" >"$logdir/system"
unversioned=$(nm -D --defined-only "$shim" | awk '$2 != "A" && $3 !~ /@/ { print $3 }')
[ -z "$unversioned" ] || fail "exported without a version: $unversioned"
extra=$(comm -23 "$logdir/shim" "$logdir/system")
[ -z "$extra" ] || fail "exported, but not so in Debian's libibverbs:"$'\n'"$extra"
absent=$(comm -13 "$logdir/shim" "$logdir/system")
[ -z "$absent" ] || fail "exported by Debian's libibverbs, not here:"$'\n'"$absent"
echo "ok   $(wc -l <"$logdir/shim") symbols, each at rdma-core's version, defaults and compatibility alike;" \
	"$(wc -l <"$logdir/private") for librdmacm.so.1 under XROCE_RDMACM_PRIVATE"

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

helpers=$logdir/helpers
cc -std=gnu11 -Wall -Wextra -Werror -o "$helpers" tests/ibverbs/helpers/helpers.c -libverbs ||
	fail "helpers.c does not build against <infiniband/verbs.h>"
mkdir -p "$logdir/files.debian" "$logdir/files.xroce"
"$helpers" "$logdir/files.debian" >"$logdir/helpers.debian" 2>&1 ||
	fail "helpers on Debian's libibverbs: $(cat "$logdir/helpers.debian")"
"$run" "$helpers" "$logdir/files.xroce" xroce >"$logdir/helpers.xroce" 2>&1 ||
	fail "helpers on xroce's libibverbs: $(cat "$logdir/helpers.xroce")"
echo "ok   device-free helpers agree with Debian's: $(cat "$logdir/helpers.xroce")"

providers=$logdir/providers
cc -std=gnu11 -Wall -Wextra -Werror -o "$providers" tests/ibverbs/providers/providers.c \
	-lmlx5 -lefa -libverbs || fail "providers.c does not build against Debian's libmlx5/libefa"
netns_exec "$NETNS_A" timeout 60 "$run" "$providers" "xroce_$VETH_A" >"$logdir/providers.out" 2>&1 ||
	fail "providers: $(cat "$logdir/providers.out")"
echo "ok   $(cat "$logdir/providers.out")"
echo "test_ibverbs_abi: PASS"
