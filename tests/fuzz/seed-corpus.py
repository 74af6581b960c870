#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Seeds the fuzz corpus (tests/fuzz/corpus/) from the golden rxe captures.

fuzz_parser gets one frame per file: the first of each RoCE opcode in each
capture, and one non-RoCE frame per capture. fuzz_core_rx gets one input per
capture: all its RoCE frames in order, in the harness's record format
(tests/fuzz/fuzz_core_rx.c: 4 control bytes, a 2-byte length, the frame),
each aimed at the harness's QP in RTS of the frame's transport, its PSN
the one that QP expects (relative PSN, offset 0).

fuzz_xdp_agree reads fuzz_parser's corpus (a symbolic link).

Usage: tests/fuzz/seed-corpus.py [VECTORS_DIR]  (default ../shared/vectors/rxe,
or $XROCE_VECTORS). Rewrites the seed files it names, leaves others alone.
"""
import os
import struct
import sys

ROCE_PORT = 4791


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    pos = 24
    number = 0
    while pos + 16 <= len(data):
        caplen = struct.unpack(endian + "I", data[pos + 8:pos + 12])[0]
        number += 1
        yield number, data[pos + 16:pos + 16 + caplen]
        pos += 16 + caplen


# fuzz_core_rx's QPs: RC, UC, UD, each in RESET, INIT, RTR, RTS, SQD, ERR.
RTS_QP_OF_TRANSPORT = {0: 3, 1: 9, 3: 15}
RELATIVE_PSN = 0x10


def bth_offset(frame):
    """Where the BTH of an IPv4/IPv6 UDP frame to port 4791 starts, else None."""
    off, proto = 14, struct.unpack(">H", frame[12:14])[0]
    if proto in (0x8100, 0x88A8):
        proto, off = struct.unpack(">H", frame[16:18])[0], 18
    if proto == 0x0800 and len(frame) >= off + 20 and frame[off + 9] == 17:
        udp = off + (frame[off] & 0x0F) * 4
    elif proto == 0x86DD and len(frame) >= off + 40 and frame[off + 6] == 17:
        udp = off + 40
    else:
        return None
    if len(frame) < udp + 20 or struct.unpack(">H", frame[udp + 2:udp + 4])[0] != ROCE_PORT:
        return None
    return udp + 8


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    vectors = (sys.argv[1] if len(sys.argv) > 1 else
               os.environ.get("XROCE_VECTORS") or
               os.path.join(here, "..", "..", "..", "shared", "vectors", "rxe"))
    parser_dir = os.path.join(here, "corpus", "fuzz_parser")
    core_dir = os.path.join(here, "corpus", "fuzz_core_rx")
    os.makedirs(parser_dir, exist_ok=True)
    os.makedirs(core_dir, exist_ok=True)
    for name in sorted(os.listdir(vectors)):
        if not name.endswith(".pcap"):
            continue
        stem = name[:-len(".pcap")]
        seen, sequence, non_roce = set(), b"", None
        for number, frame in frames(os.path.join(vectors, name)):
            bth = bth_offset(frame)
            if bth is None:
                non_roce = non_roce or (number, frame)
                continue
            op = frame[bth]
            if op not in seen:
                seen.add(op)
                write(os.path.join(parser_dir, "%s-%d" % (stem, number)), frame)
            qp = RTS_QP_OF_TRANSPORT.get(op >> 5, 0)
            # Fix everything up, the PSN expected (offset 0), rkey 0, 1 us then progress.
            frame = frame[:bth + 9] + bytes(3) + frame[bth + 12:]
            sequence += bytes([RELATIVE_PSN, qp, 0, 0x81]) + struct.pack(">H", len(frame)) + frame
        if non_roce:
            write(os.path.join(parser_dir, "%s-%d" % (stem, non_roce[0])), non_roce[1])
        write(os.path.join(core_dir, stem), sequence)


if __name__ == "__main__":
    main()
