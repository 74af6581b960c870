#!/usr/bin/env bash
# The transport core (user/lib/core/) is sans I/O: it reports through its
# port (struct xr_core_port) and never calls up into the I/O layer. So no
# file of it may include a header from outside user/lib/core/ and include/,
# and no object of it may refer to a symbol that libxroce's other objects
# (or libbpf, libxdp, libmnl) define. libc, libm, the compiler's helpers and
# libdeflate (the ICRC's CRC-32, a pure computation) are allowed.
# The checker is first shown to catch a violation (an object calling into
# the engine), so that a broken nm parse cannot make it pass vacuously.
set -u
cd "$(dirname "$0")/../.."
repo=$(pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$repo/$BUILD ;; esac

fail() {
	echo "FAIL: $*"
	exit 1
}

core_srcs=(user/lib/core/*.c)
other_srcs=()
for src in user/lib/*.c user/lib/*/*.c; do
	[[ $src == user/lib/core/* ]] || other_srcs+=("$src")
done
obj_of() { echo "$BUILD/obj/${1%.c}.o"; }
core_objs=() other_objs=()
for src in "${core_srcs[@]}"; do core_objs+=("$(obj_of "$src")"); done
for src in "${other_srcs[@]}"; do other_objs+=("$(obj_of "$src")"); done
# Only the objects of today's sources count (a stale one of a moved file does not).
make -s -C "$repo" BUILD="$BUILD" "${core_objs[@]}" "${other_objs[@]}" >/dev/null ||
	fail "building the library objects"

tmp=$(mktemp -d /tmp/xroce-core-isolated.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Symbols the I/O layer defines: libxroce's non-core objects, and the
# libraries only it may use.
for obj in "${other_objs[@]}"; do
	nm --defined-only "$obj" | awk 'NF == 3 && $2 ~ /^[A-Z]$/ { print $3 }'
done | sort -u >"$tmp/io_syms"
for lib in libbpf libxdp libmnl; do
	dir=$(pkg-config --variable=libdir "$lib" 2>/dev/null) || continue
	for so in "$dir/$lib".so*; do
		[ -f "$so" ] || continue
		nm -D --defined-only "$so" | awk 'NF == 3 { sub(/@.*/, "", $3); print $3 }'
		break
	done
done | sort -u >"$tmp/lib_syms"
grep -qx xr_engine_kick "$tmp/io_syms" || fail "no I/O-layer symbols read (nm output not understood)"
grep -qx mnl_socket_open "$tmp/lib_syms" || fail "libmnl's symbols not found (pkg-config libmnl)"
sort -u "$tmp/io_syms" "$tmp/lib_syms" >"$tmp/forbidden"

# Prints "object: symbol" for every undefined symbol of the objects given
# that the I/O layer defines.
violations() {
	for obj in "$@"; do
		nm -u "$obj" | awk '{ sub(/@.*/, "", $NF); print $NF }' | sort -u |
			comm -12 - "$tmp/forbidden" | sed "s|^|${obj#"$BUILD"/obj/}: |"
	done
}

# The checker catches a core object that calls into the engine.
cat >"$tmp/bad.c" <<'EOF'
struct xr_device;
void xr_engine_kick(struct xr_device *dev);
void bad(struct xr_device *dev) { xr_engine_kick(dev); }
EOF
cc -c "$tmp/bad.c" -o "$tmp/bad.o" || fail "compiling the self-test object"
[ -n "$(violations "$tmp/bad.o")" ] || fail "the checker misses a call to xr_engine_kick"
# And it reads the core's undefined symbols at all: memcpy is one of them.
for obj in "${core_objs[@]}"; do nm -u "$obj"; done | grep -qw memcpy ||
	fail "no undefined symbol read from the core's objects"
echo "ok: the checker flags a core object calling xr_engine_kick"

bad=$(violations "${core_objs[@]}")
[ -z "$bad" ] || fail "the core refers to symbols of the I/O layer:"$'\n'"$bad"
echo "ok: ${#core_objs[@]} core objects refer to nothing the I/O layer or libbpf/libxdp/libmnl define"

# Headers: what the compiler reads for each core file stays in the core,
# include/, or the system's headers (outside the repository).
cflags=$(pkg-config --cflags libbpf libxdp libmnl 2>/dev/null)
for src in "${core_srcs[@]}" user/lib/core/*.h; do
	# shellcheck disable=SC2086
	deps=$(cc -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser/lib -I"$BUILD/bpf" $cflags \
		-MM -MG -x c "$src" 2>"$tmp/cc.err") || { cat "$tmp/cc.err"; fail "cc -MM $src"; }
	bad=$(echo "$deps" | sed 's/^[^:]*://; s/\\$//' | tr ' ' '\n' | sed '/^$/d' |
		while read -r dep; do
			path=$(realpath -m "$dep")
			case $path in
			"$repo"/user/lib/core/* | "$repo"/include/*) ;;
			"$repo"/* | "$BUILD"/*) echo "$dep" ;;
			/*) ;;
			*) echo "$dep" ;; # not found anywhere (-MG): a header the core should not name
			esac
		done)
	[ -z "$bad" ] || fail "$src includes headers outside user/lib/core/ and include/: $bad"
done
echo "ok: core sources include only user/lib/core/, include/ and system headers"
echo "PASS"
