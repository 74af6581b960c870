# shellcheck shell=bash
# interop_report LABEL WHY DETAIL LOG...: one PASS or FAIL line of an interop
# run (WHY empty: it passed, DETAIL says what it showed), counted in run.sh's
# passed, failed and failures; a failure is followed by the last lines of
# each LOG that is not empty.
interop_report() {
	local label=$1 why=$2 detail=$3 log
	shift 3
	if [ -z "$why" ]; then
		passed=$((passed + 1))
		printf 'PASS %-34s %s\n' "$label" "$detail"
		return
	fi
	failed=$((failed + 1))
	failures+=("$label")
	printf 'FAIL %-34s %s\n' "$label" "$why"
	for log in "$@"; do
		[ -s "$log" ] && tail -n 15 "$log" | sed "s/^/    | ${log##*/}: /"
	done
}
