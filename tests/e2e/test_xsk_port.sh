#!/usr/bin/env bash
# The AF_XDP port end to end: xsk_port_echo attaches the xroce XDP program to
# one end of a veth pair and echoes, through the port, every RoCEv2 frame for
# QP XR_QPN_BASE with the MACs swapped. From the other end a raw sender
# transmits COUNT distinct SEND frames of varying length (a bounded number in
# flight) and checks that every one comes back exactly once, byte for byte.
# Run on a veth with one rx queue (the default) and with four, where the
# frames must arrive through more than one of the port's sockets. The UMEM is
# small (FRAMES) so that every rx and tx frame is recycled several times.
# Last, the order of late frames (plain ACKs use them): 32 frames, echoed
# once all are in, the first 16 submitted late and held for HOLD_MS, the last
# 16 after them the usual way: the last 16 must come back first, and the
# first 16 only after at least half of HOLD_MS.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
COUNT=${COUNT:-2000}
FRAMES=1024 # 4 queues: 128 rx frames each, above the sender's window of 64
echo_bin=$(realpath "$BUILD/tests/xsk_port_echo")

suffix=$$$((RANDOM % 1000))
log=$(mktemp -d /tmp/xsk_port.XXXXXX)
namespaces=() echo_ifs=() echo_pid=

cleanup() {
	[ -n "$echo_pid" ] && kill "$echo_pid" 2>/dev/null && wait "$echo_pid" 2>/dev/null
	local ns ifname
	for ns in "${namespaces[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	# Pins are left only when xsk_port_echo was killed before detaching.
	for ifname in "${echo_ifs[@]}"; do
		rm -rf "/sys/fs/bpf/xroce/$ifname"
	done
	rm -rf "$log"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

in_ns() { # NS CMD...: network namespace only, so that bpffs and the pins stay visible
	local ns=$1
	shift
	nsenter --net="/var/run/netns/$ns" "$@"
}

mac_of() { # NS IFNAME
	ip -n "$1" link show "$2" | awk '/link\/ether/ { print $2 }'
}

# Rx queues of IFNAME in NS whose XDP program redirected at least one frame.
queues_used() { # NS IFNAME
	in_ns "$1" ethtool -S "$2" | awk '/rx_queue_[0-9]+_xdp_redirect:/ && $2 > 0' | wc -l
}

run_case() { # QUEUES [COUNT HOLD_MS]
	local queues=$1 count=${2:-$COUNT} hold_ms=${3:-}
	local tag=$queues${hold_ms:+h}
	local ns_echo=xrxe$tag-$suffix ns_send=xrxs$tag-$suffix
	local if_echo=xrxe$tag$suffix if_send=xrxs$tag$suffix
	local net=10.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))
	local send_rc echo_rc used
	if_echo=${if_echo:0:15} if_send=${if_send:0:15}

	ip netns add "$ns_echo" || fail "cannot create namespace $ns_echo"
	namespaces+=("$ns_echo")
	ip netns add "$ns_send" || fail "cannot create namespace $ns_send"
	namespaces+=("$ns_send")
	echo_ifs+=("$if_echo")
	ip link add "$if_echo" numtxqueues "$queues" numrxqueues "$queues" netns "$ns_echo" \
		type veth peer name "$if_send" numtxqueues "$queues" numrxqueues "$queues" \
		netns "$ns_send" || fail "cannot create veth"
	if ! { ip -n "$ns_echo" addr add "$net.1/24" dev "$if_echo" &&
		ip -n "$ns_send" addr add "$net.2/24" dev "$if_send" &&
		ip -n "$ns_echo" link set "$if_echo" up &&
		ip -n "$ns_send" link set "$if_send" up; }; then
		fail "cannot configure veth"
	fi

	# shellcheck disable=SC2086 # hold_ms: no word when empty
	in_ns "$ns_echo" "$echo_bin" "$if_echo" "$count" "$FRAMES" $hold_ms \
		>"$log/echo.out" 2>"$log/echo.err" &
	echo_pid=$!
	for _ in $(seq 100); do
		grep -q '^ready' "$log/echo.out" && break
		kill -0 "$echo_pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "^ready queues=$queues\$" "$log/echo.out" ||
		fail "xsk_port_echo did not start with $queues queues: $(cat "$log/echo.out" "$log/echo.err")"

	in_ns "$ns_send" timeout 60 python3 "$log/sender.py" "$if_send" \
		"$(mac_of "$ns_send" "$if_send")" "$(mac_of "$ns_echo" "$if_echo")" \
		"$net.2" "$net.1" "$count" $hold_ms >"$log/send.out" 2>&1
	send_rc=$?
	[ "$send_rc" -eq 0 ] ||
		fail "$queues queues: sender: $(cat "$log/send.out"); echo side: $(cat "$log/echo.err")"

	for _ in $(seq 100); do
		kill -0 "$echo_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$echo_pid" 2>/dev/null && fail "$queues queues: xsk_port_echo still running"
	wait "$echo_pid"
	echo_rc=$?
	echo_pid=
	used=$(queues_used "$ns_echo" "$if_echo")
	echo "$queues queues: sender: $(cat "$log/send.out")"
	echo "$queues queues: echo:   $(tail -n 1 "$log/echo.out") rx_queues_used=$used $(cat "$log/echo.err")"
	[ "$echo_rc" -eq 0 ] ||
		fail "$queues queues: xsk_port_echo did not receive and echo exactly $count frames"
	[ "$queues" -eq 1 ] || [ "$used" -gt 1 ] ||
		fail "$queues queues: frames arrived on $used rx queue(s), the test needs several"
}

[ -x "$echo_bin" ] || fail "$echo_bin not built (make $BUILD/tests/xsk_port_echo)"

cat >"$log/sender.py" <<'EOF'
import select, socket, struct, sys, time, zlib

ifname, src_mac, dst_mac, src_ip, dst_ip, count = sys.argv[1:7]
count = int(count)
hold_ms = int(sys.argv[7]) if len(sys.argv) > 7 else 0   # the echo holds the first half late
WINDOW = 64          # frames in flight: deep enough to batch, shallow enough for veth's rings
IDLE_LIMIT = 3.0     # seconds without an echo before the rest are declared lost
ETH_P_IP = 0x0800
PACKET_OUTGOING = 4
RC_SEND_ONLY = 0x04
QPN = 0x11           # XR_QPN_BASE
SO_RCVBUFFORCE = 33  # not exported by Python's socket module

def ip_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF

def icrc(ip, udp, bth_and_payload):
    masked_ip = bytearray(ip)
    masked_ip[1] = 0xFF                      # TOS
    masked_ip[8] = 0xFF                      # TTL
    masked_ip[10:12] = b"\xff\xff"           # header checksum
    masked_udp = udp[:6] + b"\xff\xff"       # UDP checksum
    masked_bth = bytearray(bth_and_payload)
    masked_bth[4] = 0xFF                     # FECN, BECN, reserved
    crc = zlib.crc32(b"\xff" * 8 + bytes(masked_ip) + masked_udp + bytes(masked_bth))
    return struct.pack("<I", crc)

PATTERN = bytes((k * 7) & 0xFF for k in range(2048))

def frame(i):
    payload_len = 8 + 4 * (i % 360)          # 8..1444 bytes, a multiple of 4: no pad
    payload = struct.pack("!Q", i) + PATTERN[i % 251:i % 251 + payload_len - 8]
    bth = struct.pack("!BBHII", RC_SEND_ONLY, 0, 0xFFFF, QPN, (1 << 31) | (i & 0xFFFFFF))
    udp_len = 8 + len(bth) + payload_len + 4
    # rxe keeps one source port per QP; varying it spreads frames over rx queues.
    udp = struct.pack("!HHHH", 0xC000 | (i & 0x3FFF), 4791, udp_len, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, i & 0xFFFF, 0x4000, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
    eth = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) + \
        struct.pack("!H", ETH_P_IP)
    return eth + ip + udp + bth + payload + icrc(ip, udp, bth + payload)

def echo_of(f):
    return f[6:12] + f[0:6] + f[12:]

sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
sock.bind((ifname, ETH_P_IP))
sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
sock.setblocking(False)

frames = [frame(i) for i in range(count)]
sent = 0
seen = set()
arrival = {}
corrupt = duplicates = 0
start = last_echo = time.monotonic()
while len(seen) < count and time.monotonic() - last_echo < IDLE_LIMIT:
    while sent < count and sent - len(seen) < WINDOW:
        sock.send(frames[sent])
        sent += 1
    select.select([sock], [], [], 0.1)
    while True:
        try:
            data, addr = sock.recvfrom(4096)
        except BlockingIOError:
            break
        if addr[2] == PACKET_OUTGOING or len(data) < 62 or data[23] != 17 or \
                struct.unpack("!H", data[36:38])[0] != 4791:
            continue
        last_echo = time.monotonic()
        i = struct.unpack("!Q", data[54:62])[0]
        if i >= sent or data != echo_of(frames[i]):
            corrupt += 1
        elif i in seen:
            duplicates += 1
        else:
            seen.add(i)
            arrival[i] = last_echo
elapsed = time.monotonic() - start
lost = count - len(seen)
print(f"sent={sent} echoed={len(seen)} lost={lost} corrupt={corrupt} "
      f"duplicates={duplicates} seconds={elapsed:.2f} rate={len(seen) / elapsed:.0f}/s")
order_ok = True
if hold_ms and lost == 0:
    late = [arrival[i] for i in range(count // 2)]
    usual = [arrival[i] for i in range(count // 2, count)]
    gap_ms = (min(late) - max(usual)) * 1000
    order_ok = gap_ms >= hold_ms / 2
    print(f"late half back {gap_ms:.1f} ms after the other (held {hold_ms} ms)")
sys.exit(0 if lost == 0 and corrupt == 0 and duplicates == 0 and order_ok else 1)
EOF

run_case 1
run_case 4
run_case 1 32 200
echo "PASS: $COUNT frames echoed intact through the AF_XDP port, on 1 and 4 rx queues; late frames left after the others, and not while held"
