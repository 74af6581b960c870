#!/usr/bin/env bash
# Installs the Debian packages xroce builds and tests with; a no-op when all
# are present.
set -euo pipefail
pkgs=(make gcc clang llvm libbpf-dev libxdp-dev bpftool libdeflate-dev libmnl-dev libelf-dev
      zlib1g-dev iproute2 iputils-ping ethtool pkg-config iperf3 tshark libclang-rt-14-dev python3
      binutils groff-base man-db)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
