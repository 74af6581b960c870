# SPDX-License-Identifier: MIT
"""The RoCEv2 frames of a classic pcap, for the tests that check QP1's
management datagrams on the wire (tests/e2e/test_gsi_e2e.sh,
tests/interop/cm.sh). Run from the repository root:

    sys.path.insert(0, "tests/e2e"); import roce_pcap

roce_pcap.frames(PATH) yields, for every IPv4 UDP/4791 frame on Ethernet,
a Frame with its source and destination IPs (dotted), BTH opcode,
destination QPN, DETH Q_Key and source QPN (0 when the frame is too short
for a DETH), the bytes captured after the DETH (payload and ICRC) and the
UDP length on the wire (whole, however short the capture).
is_qp1_mad(FRAME): a UD SEND_ONLY from QP1 to QP1 with the GSI Q_Key and a
whole 256-byte MAD.
"""
import collections
import struct

GSI_QKEY = 0x80010000
MAD_SIZE = 256
ICRC_SIZE = 4

Frame = collections.namedtuple("Frame", "src dst opcode dqpn qkey sqpn payload udp_len")


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack(order + "I", data[off + 8:off + 12])[0]
        f = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        if len(f) < 54 or f[12:14] != b"\x08\x00" or f[23] != 17:
            continue
        if struct.unpack(">H", f[36:38])[0] != 4791:
            continue
        qkey, sqpn = struct.unpack(">II", f[54:62]) if len(f) >= 62 else (0, 0)
        yield Frame(".".join(str(b) for b in f[26:30]), ".".join(str(b) for b in f[30:34]),
                    f[42], int.from_bytes(f[47:50], "big"), qkey, sqpn & 0xffffff, f[62:],
                    struct.unpack(">H", f[38:40])[0])


def is_qp1_mad(fr):
    return (fr.opcode == 0x64 and fr.dqpn == 1 and fr.qkey == GSI_QKEY and fr.sqpn == 1 and
            len(fr.payload) >= MAD_SIZE + ICRC_SIZE)
