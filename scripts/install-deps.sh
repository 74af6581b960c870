#!/usr/bin/env bash
# Installs the Debian packages xroce builds and tests with; a no-op when all
# are present.
set -euo pipefail
pkgs=(make gcc libc6-dev linux-libc-dev clang llvm libbpf-dev libxdp-dev bpftool libdeflate-dev libmnl-dev libelf-dev
      zlib1g-dev iproute2 util-linux mawk iputils-ping ethtool pkg-config iperf3 time tshark tcpdump libclang-rt-14-dev python3
      binutils groff-base man-db libibverbs-dev librdmacm-dev ibverbs-utils perftest rdmacm-utils qperf python3-pyverbs
      linux-perf strace)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt run (a parallel build, unattended-upgrades) instead of failing.
apt_opts=(-o DPkg::Lock::Timeout=300)
$sudo_cmd apt-get "${apt_opts[@]}" update -qq
$sudo_cmd apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
