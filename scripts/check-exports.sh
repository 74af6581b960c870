#!/usr/bin/env bash
# check-exports.sh LIBRARY HEADER...
# Checks that the shared LIBRARY exports exactly the functions the HEADERs
# declare (every non-static function prototype, xroce's API): a missing one
# is a function applications cannot link against, an extra one (the engine's
# internals, a symbol of a library linked in) would become part of the ABI
# by accident. The symbol version nodes (XROCE_*) are not functions and are
# not counted. Prints each difference and exits 1; silent when they agree.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 LIBRARY HEADER..." >&2; exit 2; }
lib=$1
shift

exported=$(nm -D --defined-only "$lib" |
	awk '!($2 == "A" && $3 ~ /^XROCE_/) { sub(/@.*/, "", $3); print $3 }' | sort -u)
declared=$(grep -hE '^[A-Za-z].*\bxr_[a-z0-9_]+\(' "$@" | grep -v '^static' |
	grep -oE '\bxr_[a-z0-9_]+\(' | tr -d '(' | sort -u)

status=0
while read -r sym; do
	[ -n "$sym" ] || continue
	echo "$lib exports $sym, which no public header declares (user/lib/libxroce.map)" >&2
	status=1
done < <(comm -23 <(echo "$exported") <(echo "$declared"))
while read -r sym; do
	[ -n "$sym" ] || continue
	echo "$lib does not export $sym: add it to user/lib/libxroce.map" >&2
	status=1
done < <(comm -13 <(echo "$exported") <(echo "$declared"))
exit $status
