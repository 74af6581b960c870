#!/usr/bin/env bash
# `make install` and `make uninstall` into a staging DESTDIR with PREFIX=/usr,
# checked as a packager and an application developer would:
#   - exactly the expected files, with their modes; install writes nothing
#     into the build tree;
#   - libxroce.so.VERSION with SONAME libxroce.so.0 and the two links, that
#     exports exactly the API of the installed xroce.h (xr_* only);
#   - pkg-config finds libxroce; a program built with its --cflags --libs
#     (tests/pkg/consumer/consumer.c) runs on the installed shared library,
#     and the same program linked with --static flags against libxroce.a;
#     the two, one at each end of a veth pair between two namespaces, open
#     their devices, check the API's error conventions and move one SEND;
#   - the installed loader and tools run; the man pages format without a
#     warning, and document every command and option the programs print in
#     their help, and every function the library exports;
#   - uninstall leaves no file behind.
# Needs root. Env: BUILD (build dir: build, or build-san for SANITIZE=1).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_install "$BUILD/xroce" "$BUILD/libxroce.so"

version=$(awk '$1 == "VERSION" && $2 == ":=" { print $3 }' Makefile)
soversion=$(awk '$1 == "SOVERSION" && $2 == ":=" { print $3 }' Makefile)
[ -n "$version" ] && [ -n "$soversion" ] || fail "no VERSION/SOVERSION in the Makefile"
stage=$logdir/stage
lib=$stage/usr/lib
sanitize=0 cc_flags=(-std=gnu11 -Wall -Wextra -Werror)
if [ "$BUILD" = build-san ]; then
	sanitize=1
	cc_flags+=(-fsanitize=address,undefined)
fi

# make in the repository, without what the make running the tests passed down,
# on the build tree under test.
run_make() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory SANITIZE=$sanitize \
		BUILD="$BUILD" "$@"
}

# ---- install --------------------------------------------------------------

touch "$logdir/before-install"
run_make install DESTDIR="$stage" PREFIX=/usr >"$logdir/install.log" 2>&1 ||
	{ cat "$logdir/install.log"; fail "make install failed"; }
rebuilt=$(find "$BUILD" -newer "$logdir/before-install" -print)
[ -z "$rebuilt" ] || fail "make install wrote into $BUILD (run make first):"$'\n'"$rebuilt"
! grep -qx ldconfig "$logdir/install.log" || fail "make install ran ldconfig with DESTDIR set"
run_make -n install PREFIX=/usr | grep -qx ldconfig ||
	fail "make install without DESTDIR would not run ldconfig"

expected=(
	"usr/lib/libxroce.so.$version 755" "usr/lib/libxroce.so.$soversion link"
	"usr/lib/libxroce.so link" "usr/lib/libxroce.a 644" "usr/lib/pkgconfig/libxroce.pc 644"
	"usr/lib/xroce/xroce_xdp.bpf.o 644" "usr/sbin/xroce 755" "usr/bin/xroce-pingpong 755"
	"usr/bin/xroce-uc-pingpong 755" "usr/bin/xroce-ud-pingpong 755"
	"usr/bin/xroce-srq-pingpong 755" "usr/bin/xroce-perf 755" "usr/bin/xroce-demo 755"
	"usr/share/man/man8/xroce.8 644" "usr/share/man/man3/libxroce.3 644"
	"usr/share/man/man1/xroce-pingpong.1 644" "usr/share/man/man1/xroce-uc-pingpong.1 644"
	"usr/share/man/man1/xroce-ud-pingpong.1 644" "usr/share/man/man1/xroce-srq-pingpong.1 644"
	"usr/share/man/man1/xroce-perf.1 644" "usr/share/man/man1/xroce-demo.1 644"
	"usr/lib/xroce/ibverbs/libibverbs.so.1 755" "usr/lib/xroce/ibverbs/librdmacm.so.1 755"
	"usr/bin/xroce-run 755"
	"usr/share/man/man1/xroce-run.1 644"
)
for header in include/xroce/*.h; do
	expected+=("usr/include/xroce/${header##*/} 644")
done
installed=$(find "$stage" -type l -printf '%P link\n' -o -type f -printf '%P %m\n' | sort)
if [ "$installed" != "$(printf '%s\n' "${expected[@]}" | sort)" ]; then
	diff <(printf '%s\n' "${expected[@]}" | sort) <(echo "$installed") | sed 's/^/    /'
	fail "installed files (> ) differ from the expected ones (< ), as 'path mode'"
fi
echo "ok   make install: ${#expected[@]} files, modes as expected, nothing rebuilt"

# xroce's libibverbs.so.1 and librdmacm.so.1 are installed beside, never over, the system's; the
# installed xroce-run leads programs to it.
ib_soname=$(readelf -d "$lib/xroce/ibverbs/libibverbs.so.1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$ib_soname" = libibverbs.so.1 ] || fail "xroce's libibverbs.so.1 has SONAME '$ib_soname'"
cm_soname=$(readelf -d "$lib/xroce/ibverbs/librdmacm.so.1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$cm_soname" = librdmacm.so.1 ] || fail "xroce's librdmacm.so.1 has SONAME '$cm_soname'"
grep -q '^LD_LIBRARY_PATH=/usr/lib/xroce/ibverbs\b' "$stage/usr/bin/xroce-run" ||
	fail "the installed xroce-run does not point at /usr/lib/xroce/ibverbs"
"$stage/usr/bin/xroce-run" env | grep -q '^LD_LIBRARY_PATH=/usr/lib/xroce/ibverbs' ||
	fail "a program run by xroce-run does not get /usr/lib/xroce/ibverbs first"
echo "ok   libibverbs.so.1 and librdmacm.so.1 in /usr/lib/xroce/ibverbs, xroce-run leads there"

# ---- the shared library ------------------------------------------------

soname=$(readelf -d "$lib/libxroce.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libxroce.so.$soversion" ] || fail "SONAME is '$soname', not libxroce.so.$soversion"
[ "$(readlink "$lib/libxroce.so.$soversion")" = "libxroce.so.$version" ] ||
	fail "libxroce.so.$soversion does not point at libxroce.so.$version"
[ "$(readlink -f "$lib/libxroce.so")" = "$(readlink -f "$lib/libxroce.so.$version")" ] ||
	fail "libxroce.so does not lead to libxroce.so.$version"
exports=$(nm -D --defined-only "$lib/libxroce.so.$version" |
	awk '!($2 == "A" && $3 ~ /^XROCE_/) { sub(/@.*/, "", $3); print $3 }')
leaks=$(grep -v '^xr_' <<<"$exports")
[ -z "$leaks" ] || fail "libxroce.so exports symbols outside xr_*:"$'\n'"$leaks"
scripts/check-exports.sh "$lib/libxroce.so.$version" "$stage"/usr/include/xroce/*.h ||
	fail "the installed library does not export exactly the installed xroce.h's API"
echo "ok   SONAME $soname, links, $(wc -l <<<"$exports") symbols exported, all of the API, only xr_*"

readelf -h "$lib/xroce/xroce_xdp.bpf.o" | grep -q 'Machine: *Linux BPF' ||
	fail "xroce_xdp.bpf.o is not a BPF object"
cmp -s "$lib/xroce/xroce_xdp.bpf.o" "$BUILD/bpf/xroce_xdp.bpf.o" ||
	fail "the installed BPF object is not the one the library embeds"

# ---- building against it --------------------------------------------------

export PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_PATH=$lib/pkgconfig
[ "$(pkg-config --modversion libxroce)" = "$version" ] ||
	fail "pkg-config --modversion libxroce is not $version"
read -ra pc_dynamic <<<"$(pkg-config --cflags --libs libxroce)" ||
	fail "pkg-config --cflags --libs libxroce failed"
# -l:libxroce.a: the archive, although the shared library is next to it.
read -ra pc_static <<<"$(pkg-config --static --cflags --libs libxroce | sed 's/-lxroce\b/-l:libxroce.a/')"
[[ " ${pc_dynamic[*]} " == *" -I$stage/usr/include "* ]] ||
	fail "pkg-config --cflags does not name the installed headers: ${pc_dynamic[*]}"
consumer=$logdir/consumer consumer_static=$logdir/consumer-static
cc "${cc_flags[@]}" -o "$consumer" tests/pkg/consumer/consumer.c "${pc_dynamic[@]}" ||
	fail "building against the shared library failed"
cc "${cc_flags[@]}" -o "$consumer_static" tests/pkg/consumer/consumer.c "${pc_static[@]}" ||
	fail "building against the static library with pkg-config --static failed"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH
export LD_LIBRARY_PATH=$lib
[ "$(ldd "$consumer" | awk '$1 == "libxroce.so.'"$soversion"'" { print $3 }')" = "$lib/libxroce.so.$soversion" ] ||
	fail "the consumer does not load the installed libxroce.so.$soversion: $(ldd "$consumer")"
objdump -T "$consumer" | grep -q '(XROCE_0\.1) *xr_open_device$' ||
	fail "the consumer's xr_open_device is not bound to version XROCE_0.1"
! readelf -d "$consumer_static" | grep -q 'NEEDED.*libxroce' ||
	fail "the --static consumer still needs libxroce.so"
nm "$consumer_static" | grep -q ' T xr_open_device$' ||
	fail "the --static consumer does not contain libxroce"
echo "ok   built with pkg-config: against libxroce.so.$soversion, and against libxroce.a (--static)"

# ---- running it --------------------------------------------------------------

netns_pair pk "$(e2e_subnet)" || fail "could not create the namespaces"
gids=$(netns_exec "$NETNS_A" "$stage/usr/sbin/xroce" gids "$VETH_A") ||
	fail "the installed xroce gids $VETH_A failed"
# shellcheck disable=SC2086 # the address's four numbers
v4_gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${ADDR_A//./ })
grep -q "$v4_gid" <<<"$gids" || fail "xroce gids does not list $v4_gid: $gids"

# Each one's stdout is the other's stdin; opening the FIFOs in opposite
# orders lets both opens complete.
mkfifo "$logdir/to-recv" "$logdir/to-send"
# nsenter directly (not netns_exec, a function): $! is then the process the cleanup stops.
nsenter --net="/var/run/netns/$NETNS_B" timeout 30 "$consumer_static" "$VETH_B" recv \
	<"$logdir/to-recv" >"$logdir/to-send" 2>"$logdir/server.log" &
server_pid=$!
recv_status=0 send_status=0
netns_exec "$NETNS_A" timeout 30 "$consumer" "$VETH_A" send \
	>"$logdir/to-recv" <"$logdir/to-send" 2>"$logdir/client.log" || send_status=$?
wait "$server_pid" || recv_status=$?
server_pid=""
if [ "$send_status" -ne 0 ] || [ "$recv_status" -ne 0 ]; then
	e2e_show_logs "consumer (server = recv, static; client = send, shared)"
	fail "consumers: sender exit $send_status, receiver exit $recv_status (124 = timed out)"
fi
grep -q "^consumer: sent 3000 bytes" "$logdir/client.log" &&
	grep -q "^consumer: received 3000 bytes" "$logdir/server.log" ||
	fail "the consumers did not report the SEND"
echo "ok   one SEND from the shared-library build to the static build, bytes checked"

for tool in xroce-pingpong xroce-uc-pingpong xroce-ud-pingpong xroce-srq-pingpong xroce-perf; do
	"$stage/usr/bin/$tool" -h >"$logdir/$tool.help" || fail "$tool -h failed"
done
"$stage/usr/sbin/xroce" help >"$logdir/xroce.help" || fail "xroce help failed"
unset LD_LIBRARY_PATH

# ---- man pages -----------------------------------------------------------

man_dir=$stage/usr/share/man
for page in "$man_dir"/man*/*; do
	warnings=$(groff -man -ww -z "$page" 2>&1; MAN_DISABLE_SECCOMP=1 man --warnings -l "$page" 2>&1 >/dev/null)
	[ -z "$warnings" ] || fail "${page#"$stage"/}: formatting warnings:"$'\n'"$warnings"
	grep -q "^\.TH .*\"xroce $version\"" "$page" || fail "${page#"$stage"/}: .TH without the version"
done
[ "$(man -M "$man_dir" -w 8 xroce)" = "$man_dir/man8/xroce.8" ] || fail "man -w 8 xroce"
[ "$(man -M "$man_dir" -w 3 libxroce)" = "$man_dir/man3/libxroce.3" ] || fail "man -w 3 libxroce"

# man_documents PAGE WORD...: each WORD (a command or an option) appears in
# PAGE as roff writes it, with \- for each -.
man_documents() {
	local page=$1 word
	shift
	for word in "$@"; do
		grep -qF -- "${word//-/\\-}" "$page" || fail "${page##*/} does not document $word"
	done
}
mapfile -t commands < <(awk '/^  [a-z]/ { print $1 }' "$logdir/xroce.help")
[ ${#commands[@]} -ge 6 ] || fail "xroce help lists ${#commands[@]} commands"
for cmd in "${commands[@]}"; do
	grep -q "^\.B $cmd\b" "$man_dir/man8/xroce.8" || fail "xroce.8 has no entry for '$cmd'"
done
man_documents "$man_dir/man8/xroce.8" $(grep -oE -- '--[A-Za-z][A-Za-z_-]*' "$logdir/xroce.help")
for tool in xroce-pingpong xroce-uc-pingpong xroce-ud-pingpong xroce-srq-pingpong xroce-perf; do
	man_documents "$man_dir/man1/$tool.1" \
		$(grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z_-]*' "$logdir/$tool.help" | tr -d ' ,')
done
for function in $exports; do
	grep -qF "$function(" "$man_dir/man3/libxroce.3" || fail "libxroce.3 does not document $function"
done
echo "ok   man pages format cleanly and document ${#commands[@]} loader commands, every tool option and every function of the API"

# ---- uninstall --------------------------------------------------------------

run_make uninstall DESTDIR="$stage" PREFIX=/usr >"$logdir/uninstall.log" 2>&1 ||
	{ cat "$logdir/uninstall.log"; fail "make uninstall failed"; }
left=$(find "$stage" ! -type d -printf '%P\n')
[ -z "$left" ] || fail "make uninstall left files behind:"$'\n'"$left"
for dir in usr/include/xroce usr/lib/xroce; do
	[ ! -e "$stage/$dir" ] || fail "make uninstall left $dir"
done
echo "ok   make uninstall removed every file"
