# shellcheck shell=bash
# What the xroce-perf tests share (test_perf, test_perf_ud_uc, test_perf_srq).
#
# perf_result_ok LOG SIZE KIND TOTAL  LOG has a result line for SIZE and TOTAL
#                                     iterations (of all QPs): for KIND bw,
#                                     "SIZE TOTAL PEAK AVG RATE" with a
#                                     non-zero average and rate; for lat,
#                                     "SIZE TOTAL MIN MAX TYPICAL AVG ..." with
#                                     a non-zero typical and average latency.

perf_result_ok() {
	awk -v size="$2" -v iters="$4" -v kind="$3" '
		$1 == size && $2 == iters && NF >= 5 {
			if (kind == "bw" && $4 > 0 && $5 > 0) ok = 1
			if (kind == "lat" && NF >= 9 && $5 > 0 && $6 > 0) ok = 1
		}
		END { exit !ok }' "$1"
}
