/* SPDX-License-Identifier: MIT */
/*
 * RoCEv2 wire format: InfiniBand transport headers as they appear after the
 * UDP header (destination port 4791), the one opcode table that drives both
 * parsing and building, PSN arithmetic, AETH syndromes and the RNR timer
 * table.
 *
 * Included by the XDP programs and by userspace alike, so it depends on
 * <linux/types.h> only and everything in it is static inline or static const.
 * All multi-byte header fields are big-endian on the wire; the structs below
 * are packed byte images, read them with the accessors.
 */
#ifndef XROCE_WIRE_H
#define XROCE_WIRE_H

#include <linux/types.h>

#define XR_ROCEV2_UDP_PORT 4791
#define XR_ICRC_SIZE 4
#define XR_DEFAULT_PKEY 0xffff
#define XR_GSI_QKEY 0x80010000u
#define XR_MULTICAST_QPN 0xffffffu
#define XR_PSN_MASK 0xffffffu
#define XR_QPN_MASK 0xffffffu

/* Base Transport Header, 12 bytes. */
struct xr_bth {
	__u8 opcode;
	__u8 flags; /* SE:1 MigReq:1 PadCnt:2 TVer:4 */
	__be16 pkey;
	__be32 qpn; /* byte 0: FECN:1 BECN:1 reserved:6, then DestQP:24 */
	__be32 apsn; /* AckReq:1 reserved:7, then PSN:24 */
} __attribute__((packed));

#define XR_BTH_SE 0x80
#define XR_BTH_MIG 0x40
#define XR_BTH_PAD_SHIFT 4
#define XR_BTH_PAD_MASK 0x30
#define XR_BTH_TVER_MASK 0x0f
#define XR_BTH_ACKREQ 0x80000000u
/*
 * xroce's own, in a bit the spec reserves (transmitted 0, ignored on
 * receipt, covered by the ICRC): the requester speaks selective repeat
 * (docs/selective-repeat.md). Set on every RC request an xroce requester
 * sends; a standard responder never looks at it.
 */
#define XR_BTH_SR_CAPABLE 0x40000000u
/* And the next reserved bit: it heard the responder's SACK, so both ends speak it. */
#define XR_BTH_SR_HEARD 0x20000000u
/*
 * BECN, in the byte before DestQP: set in a CNP (RoCEv2 annex A17.9.3).
 * Like FECN it is variant: the ICRC does not cover it.
 */
#define XR_BTH_BECN 0x40000000u

/* The IP header's ECN field (RFC 3168): RoCEv2 sends ECT(0), a congested switch sets CE. */
#define XR_ECN_MASK 0x03
#define XR_ECN_ECT0 0x02
#define XR_ECN_ECT1 0x01
#define XR_ECN_CE 0x03

/* RDMA Extended Transport Header, 16 bytes. */
struct xr_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __attribute__((packed));

/* Atomic Extended Transport Header, 28 bytes. */
struct xr_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __attribute__((packed));

/* Atomic Acknowledge Extended Transport Header, 8 bytes. */
struct xr_atmack {
	__be64 orig;
} __attribute__((packed));

/* ACK Extended Transport Header, 4 bytes: syndrome:8 MSN:24. */
struct xr_aeth {
	__be32 smsn;
} __attribute__((packed));

/* Immediate data, 4 bytes. */
struct xr_immdt {
	__be32 imm;
} __attribute__((packed));

/* Invalidate Extended Transport Header, 4 bytes. */
struct xr_ieth {
	__be32 rkey;
} __attribute__((packed));

/* Datagram Extended Transport Header, 8 bytes. */
struct xr_deth {
	__be32 qkey;
	__be32 sqpn; /* reserved:8 SrcQP:24 */
} __attribute__((packed));

/*
 * Masked Atomic Extended Transport Header, 44 bytes: xroce's extension for
 * masked compare-and-swap and masked fetch-and-add (docs/masked-atomics.md).
 * Masked CAS: swap_add = swap, compare, swap_mask, compare_mask.
 * Masked FAA: swap_add = the addend, swap_mask = the field boundary mask
 * (a set bit is the most significant bit of a field), compare and
 * compare_mask zero.
 */
struct xr_matmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
	__be64 swap_mask;
	__be64 compare_mask;
} __attribute__((packed));

#define XR_BTH_SIZE 12
#define XR_RETH_SIZE 16
#define XR_ATMETH_SIZE 28
#define XR_ATMACK_SIZE 8
#define XR_AETH_SIZE 4
#define XR_IMMDT_SIZE 4
#define XR_IETH_SIZE 4
#define XR_DETH_SIZE 8
#define XR_MATMETH_SIZE 44
#define XR_PLETH_SIZE 8
#define XR_SACKETH_SIZE 36 /* the newest PSN received, then a bitmap of 256 */
#define XR_CNP_RSVD_SIZE 16  /* a CNP's reserved bytes after its BTH, sent as 0 */
/*
 * Selective repeat: PSNs past the responder's expected PSN it holds out of
 * order, at most, and so the bits of a SACK's bitmap (in XR_SACKETH_SIZE).
 */
#define XR_SR_WINDOW 256

/* Transport service in opcode bits 7:5. */
enum xr_transport {
	XR_TRANSPORT_RC = 0x00,
	XR_TRANSPORT_UC = 0x20,
	XR_TRANSPORT_RD = 0x40,
	XR_TRANSPORT_UD = 0x60,
	XR_TRANSPORT_CNP = 0x80, /* RoCEv2's congestion notification */
};

enum xr_opcode {
	XR_OP_RC_SEND_FIRST = 0x00,
	XR_OP_RC_SEND_MIDDLE = 0x01,
	XR_OP_RC_SEND_LAST = 0x02,
	XR_OP_RC_SEND_LAST_IMM = 0x03,
	XR_OP_RC_SEND_ONLY = 0x04,
	XR_OP_RC_SEND_ONLY_IMM = 0x05,
	XR_OP_RC_WRITE_FIRST = 0x06,
	XR_OP_RC_WRITE_MIDDLE = 0x07,
	XR_OP_RC_WRITE_LAST = 0x08,
	XR_OP_RC_WRITE_LAST_IMM = 0x09,
	XR_OP_RC_WRITE_ONLY = 0x0a,
	XR_OP_RC_WRITE_ONLY_IMM = 0x0b,
	XR_OP_RC_READ_REQUEST = 0x0c,
	XR_OP_RC_READ_RESPONSE_FIRST = 0x0d,
	XR_OP_RC_READ_RESPONSE_MIDDLE = 0x0e,
	XR_OP_RC_READ_RESPONSE_LAST = 0x0f,
	XR_OP_RC_READ_RESPONSE_ONLY = 0x10,
	XR_OP_RC_ACK = 0x11,
	XR_OP_RC_ATOMIC_ACK = 0x12,
	XR_OP_RC_CMP_SWAP = 0x13,
	XR_OP_RC_FETCH_ADD = 0x14,
	XR_OP_RC_SEND_LAST_INV = 0x16,
	XR_OP_RC_SEND_ONLY_INV = 0x17,

	XR_OP_UC_SEND_FIRST = 0x20,
	XR_OP_UC_SEND_MIDDLE = 0x21,
	XR_OP_UC_SEND_LAST = 0x22,
	XR_OP_UC_SEND_LAST_IMM = 0x23,
	XR_OP_UC_SEND_ONLY = 0x24,
	XR_OP_UC_SEND_ONLY_IMM = 0x25,
	XR_OP_UC_WRITE_FIRST = 0x26,
	XR_OP_UC_WRITE_MIDDLE = 0x27,
	XR_OP_UC_WRITE_LAST = 0x28,
	XR_OP_UC_WRITE_LAST_IMM = 0x29,
	XR_OP_UC_WRITE_ONLY = 0x2a,
	XR_OP_UC_WRITE_ONLY_IMM = 0x2b,

	XR_OP_UD_SEND_ONLY = 0x64,
	XR_OP_UD_SEND_ONLY_IMM = 0x65,

	/*
	 * RoCEv2 Congestion Notification Packet: the receiver of a CE-marked
	 * packet tells its sender's QP (DestQP) to slow down; BTH (BECN set,
	 * PSN 0) and 16 reserved bytes.
	 */
	XR_OP_CNP = 0x81,

	/* Manufacturer-specific range (0xC0-0xFF): xroce's masked atomics, RC. */
	XR_OP_RC_MASKED_CMP_SWAP = 0xc0,
	XR_OP_RC_MASKED_FETCH_ADD = 0xc1,
	/* Selective repeat (docs/selective-repeat.md): an ACK naming what is missing. */
	XR_OP_RC_SACK = 0xc2,
	/*
	 * Selective repeat's WRITEs: each RC WRITE opcode in the 0xe0 range,
	 * every packet carrying the message's RETH and its own offset (PLETH),
	 * so that it can be placed whatever arrived before it.
	 */
	XR_OP_SR_WRITE_FIRST = 0xe6,
	XR_OP_SR_WRITE_MIDDLE = 0xe7,
	XR_OP_SR_WRITE_LAST = 0xe8,
	XR_OP_SR_WRITE_LAST_IMM = 0xe9,
	XR_OP_SR_WRITE_ONLY = 0xea,
	XR_OP_SR_WRITE_ONLY_IMM = 0xeb,
};

/* The selective-repeat form of an RC WRITE opcode. */
#define XR_SR_OPCODE(rc_opcode) (0xe0 | (rc_opcode))

/* Properties of an opcode: which headers follow the BTH and what it means. */
enum xr_opflag {
	XR_OPF_VALID = 1u << 0,
	XR_OPF_RETH = 1u << 1,
	XR_OPF_ATMETH = 1u << 2,
	XR_OPF_ATMACK = 1u << 3,
	XR_OPF_AETH = 1u << 4,
	XR_OPF_IMMDT = 1u << 5,
	XR_OPF_IETH = 1u << 6,
	XR_OPF_DETH = 1u << 7,
	XR_OPF_PAYLOAD = 1u << 8, /* may carry payload */
	XR_OPF_REQUEST = 1u << 9, /* requester -> responder */
	XR_OPF_RESPONSE = 1u << 10, /* responder -> requester */
	XR_OPF_FIRST = 1u << 11, /* FIRST or ONLY */
	XR_OPF_LAST = 1u << 12, /* LAST or ONLY */
	XR_OPF_SEND = 1u << 13,
	XR_OPF_WRITE = 1u << 14,
	XR_OPF_READ = 1u << 15,
	XR_OPF_ATOMIC = 1u << 16,
	XR_OPF_RECV_WQE = 1u << 17, /* consumes a receive WQE at the responder */
	XR_OPF_MATMETH = 1u << 18, /* masked atomic header */
	XR_OPF_PLETH = 1u << 19,   /* placement header: the packet's offset in its message */
	XR_OPF_SACKETH = 1u << 20, /* selective ACK bitmap */
	XR_OPF_XROCE = 1u << 21,   /* xroce's own RC opcode, in the manufacturer range */
	XR_OPF_CNP = 1u << 22,	   /* a congestion notification: neither request nor response */
};

struct xr_opinfo {
	__u32 flags;
	__u8 hdr_len; /* BTH and every extension header */
};

#define XR__REQ (XR_OPF_VALID | XR_OPF_REQUEST)
#define XR__RSP (XR_OPF_VALID | XR_OPF_RESPONSE)
#define XR__FO (XR_OPF_FIRST)
#define XR__LO (XR_OPF_LAST)
#define XR__SEND (XR__REQ | XR_OPF_SEND | XR_OPF_PAYLOAD | XR_OPF_RECV_WQE)
#define XR__WRITE (XR__REQ | XR_OPF_WRITE | XR_OPF_PAYLOAD)
#define XR__SR (XR_OPF_RETH | XR_OPF_PLETH | XR_OPF_XROCE)
#define XR__SR_LEN (XR_BTH_SIZE + XR_RETH_SIZE + XR_PLETH_SIZE)
#define XR__SEND_OPS(base)                                                          \
	[(base) + 0] = { XR__SEND | XR__FO, XR_BTH_SIZE },                          \
	[(base) + 1] = { XR__SEND, XR_BTH_SIZE },                                   \
	[(base) + 2] = { XR__SEND | XR__LO, XR_BTH_SIZE },                          \
	[(base) + 3] = { XR__SEND | XR__LO | XR_OPF_IMMDT, XR_BTH_SIZE + XR_IMMDT_SIZE }, \
	[(base) + 4] = { XR__SEND | XR__FO | XR__LO, XR_BTH_SIZE },                 \
	[(base) + 5] = { XR__SEND | XR__FO | XR__LO | XR_OPF_IMMDT, XR_BTH_SIZE + XR_IMMDT_SIZE }
#define XR__WRITE_OPS(base)                                                         \
	[(base) + 6] = { XR__WRITE | XR__FO | XR_OPF_RETH, XR_BTH_SIZE + XR_RETH_SIZE }, \
	[(base) + 7] = { XR__WRITE, XR_BTH_SIZE },                                  \
	[(base) + 8] = { XR__WRITE | XR__LO, XR_BTH_SIZE },                         \
	[(base) + 9] = { XR__WRITE | XR__LO | XR_OPF_IMMDT | XR_OPF_RECV_WQE,       \
			 XR_BTH_SIZE + XR_IMMDT_SIZE },                              \
	[(base) + 10] = { XR__WRITE | XR__FO | XR__LO | XR_OPF_RETH,                \
			  XR_BTH_SIZE + XR_RETH_SIZE },                              \
	[(base) + 11] = { XR__WRITE | XR__FO | XR__LO | XR_OPF_RETH | XR_OPF_IMMDT | \
				  XR_OPF_RECV_WQE,                                   \
			  XR_BTH_SIZE + XR_RETH_SIZE + XR_IMMDT_SIZE }

/* The one opcode table: parsing, building and the XDP program all use it. */
static const struct xr_opinfo xr_opinfo[256] = {
	XR__SEND_OPS(XR_TRANSPORT_RC),
	XR__WRITE_OPS(XR_TRANSPORT_RC),
	[XR_OP_RC_READ_REQUEST] = { XR__REQ | XR__FO | XR__LO | XR_OPF_READ | XR_OPF_RETH,
				    XR_BTH_SIZE + XR_RETH_SIZE },
	[XR_OP_RC_READ_RESPONSE_FIRST] = { XR__RSP | XR__FO | XR_OPF_READ | XR_OPF_AETH |
						   XR_OPF_PAYLOAD,
					   XR_BTH_SIZE + XR_AETH_SIZE },
	[XR_OP_RC_READ_RESPONSE_MIDDLE] = { XR__RSP | XR_OPF_READ | XR_OPF_PAYLOAD, XR_BTH_SIZE },
	[XR_OP_RC_READ_RESPONSE_LAST] = { XR__RSP | XR__LO | XR_OPF_READ | XR_OPF_AETH |
						  XR_OPF_PAYLOAD,
					  XR_BTH_SIZE + XR_AETH_SIZE },
	[XR_OP_RC_READ_RESPONSE_ONLY] = { XR__RSP | XR__FO | XR__LO | XR_OPF_READ | XR_OPF_AETH |
						  XR_OPF_PAYLOAD,
					  XR_BTH_SIZE + XR_AETH_SIZE },
	[XR_OP_RC_ACK] = { XR__RSP | XR__FO | XR__LO | XR_OPF_AETH, XR_BTH_SIZE + XR_AETH_SIZE },
	[XR_OP_RC_ATOMIC_ACK] = { XR__RSP | XR__FO | XR__LO | XR_OPF_AETH | XR_OPF_ATMACK |
					  XR_OPF_ATOMIC,
				  XR_BTH_SIZE + XR_AETH_SIZE + XR_ATMACK_SIZE },
	[XR_OP_RC_CMP_SWAP] = { XR__REQ | XR__FO | XR__LO | XR_OPF_ATOMIC | XR_OPF_ATMETH,
				XR_BTH_SIZE + XR_ATMETH_SIZE },
	[XR_OP_RC_FETCH_ADD] = { XR__REQ | XR__FO | XR__LO | XR_OPF_ATOMIC | XR_OPF_ATMETH,
				 XR_BTH_SIZE + XR_ATMETH_SIZE },
	[XR_OP_RC_SEND_LAST_INV] = { XR__SEND | XR__LO | XR_OPF_IETH, XR_BTH_SIZE + XR_IETH_SIZE },
	[XR_OP_RC_SEND_ONLY_INV] = { XR__SEND | XR__FO | XR__LO | XR_OPF_IETH,
				     XR_BTH_SIZE + XR_IETH_SIZE },
	[XR_OP_RC_MASKED_CMP_SWAP] = { XR__REQ | XR__FO | XR__LO | XR_OPF_ATOMIC | XR_OPF_MATMETH |
					       XR_OPF_XROCE,
				       XR_BTH_SIZE + XR_MATMETH_SIZE },
	[XR_OP_RC_MASKED_FETCH_ADD] = { XR__REQ | XR__FO | XR__LO | XR_OPF_ATOMIC | XR_OPF_MATMETH |
						XR_OPF_XROCE,
					XR_BTH_SIZE + XR_MATMETH_SIZE },
	[XR_OP_RC_SACK] = { XR__RSP | XR__FO | XR__LO | XR_OPF_AETH | XR_OPF_SACKETH | XR_OPF_XROCE,
			    XR_BTH_SIZE + XR_AETH_SIZE + XR_SACKETH_SIZE },
	[XR_OP_SR_WRITE_FIRST] = { XR__WRITE | XR__FO | XR__SR, XR__SR_LEN },
	[XR_OP_SR_WRITE_MIDDLE] = { XR__WRITE | XR__SR, XR__SR_LEN },
	[XR_OP_SR_WRITE_LAST] = { XR__WRITE | XR__LO | XR__SR, XR__SR_LEN },
	[XR_OP_SR_WRITE_LAST_IMM] = { XR__WRITE | XR__LO | XR__SR | XR_OPF_IMMDT | XR_OPF_RECV_WQE,
				      XR__SR_LEN + XR_IMMDT_SIZE },
	[XR_OP_SR_WRITE_ONLY] = { XR__WRITE | XR__FO | XR__LO | XR__SR, XR__SR_LEN },
	[XR_OP_SR_WRITE_ONLY_IMM] = { XR__WRITE | XR__FO | XR__LO | XR__SR | XR_OPF_IMMDT |
					      XR_OPF_RECV_WQE,
				      XR__SR_LEN + XR_IMMDT_SIZE },
	XR__SEND_OPS(XR_TRANSPORT_UC),
	XR__WRITE_OPS(XR_TRANSPORT_UC),
	[XR_OP_UD_SEND_ONLY] = { XR__SEND | XR__FO | XR__LO | XR_OPF_DETH,
				 XR_BTH_SIZE + XR_DETH_SIZE },
	[XR_OP_UD_SEND_ONLY_IMM] = { XR__SEND | XR__FO | XR__LO | XR_OPF_DETH | XR_OPF_IMMDT,
				     XR_BTH_SIZE + XR_DETH_SIZE + XR_IMMDT_SIZE },
	[XR_OP_CNP] = { XR_OPF_VALID | XR_OPF_CNP, XR_BTH_SIZE + XR_CNP_RSVD_SIZE },
};

#undef XR__REQ
#undef XR__RSP
#undef XR__FO
#undef XR__LO
#undef XR__SEND
#undef XR__WRITE
#undef XR__SEND_OPS
#undef XR__SR
#undef XR__SR_LEN
#undef XR__WRITE_OPS

/*
 * Offset of each extension header from the start of the BTH, in the order
 * the spec fixes: BTH [DETH] [RETH|AtomicETH] [ImmDt|IETH] for requests,
 * BTH AETH [AtomicAckETH] for responses.
 */
static inline int xr_deth_off(__u32 f)
{
	(void)f;
	return XR_BTH_SIZE;
}

static inline int xr_reth_off(__u32 f)
{
	return XR_BTH_SIZE + ((f & XR_OPF_DETH) ? XR_DETH_SIZE : 0);
}

static inline int xr_atmeth_off(__u32 f)
{
	return xr_reth_off(f);
}

/* xroce's placement header follows the RETH (docs/selective-repeat.md). */
static inline int xr_pleth_off(__u32 f)
{
	return xr_reth_off(f) + ((f & XR_OPF_RETH) ? XR_RETH_SIZE : 0);
}

static inline int xr_immdt_off(__u32 f)
{
	return xr_pleth_off(f) + ((f & XR_OPF_PLETH) ? XR_PLETH_SIZE : 0) +
	       ((f & XR_OPF_ATMETH) ? XR_ATMETH_SIZE : 0) +
	       ((f & XR_OPF_MATMETH) ? XR_MATMETH_SIZE : 0);
}

static inline int xr_ieth_off(__u32 f)
{
	return xr_immdt_off(f);
}

static inline int xr_aeth_off(__u32 f)
{
	(void)f;
	return XR_BTH_SIZE;
}

static inline int xr_atmack_off(__u32 f)
{
	return XR_BTH_SIZE + ((f & XR_OPF_AETH) ? XR_AETH_SIZE : 0);
}

static inline int xr_sacketh_off(__u32 f)
{
	return xr_atmack_off(f);
}

/* The transport of an opcode: xroce's extension opcodes are RC. */
static inline __u8 xr_opcode_transport(__u8 opcode)
{
	return (xr_opinfo[opcode].flags & XR_OPF_XROCE) ? XR_TRANSPORT_RC : (opcode & 0xe0);
}

/* 24-bit PSN arithmetic. */
static inline __u32 xr_psn_add(__u32 psn, __u32 n)
{
	return (psn + n) & XR_PSN_MASK;
}

/* < 0: a is before b (duplicate region), 0: equal, > 0: a is after b. */
static inline __s32 xr_psn_diff(__u32 a, __u32 b)
{
	return (__s32)((a - b) << 8) >> 8;
}

/* AETH syndrome, bits 7:5 the kind, 4:0 the value. */
#define XR_AETH_TYPE_MASK 0xe0
#define XR_AETH_ACK 0x00
#define XR_AETH_RNR_NAK 0x20
#define XR_AETH_NAK 0x60
#define XR_AETH_VALUE_MASK 0x1f
#define XR_AETH_ACK_UNLIMITED 0x1f /* credit code 31: no end-to-end flow control */

enum xr_nak_code {
	XR_NAK_PSN_SEQ_ERR = 0,
	XR_NAK_INVALID_REQUEST = 1,
	XR_NAK_REMOTE_ACCESS_ERR = 2,
	XR_NAK_REMOTE_OP_ERR = 3,
	XR_NAK_INVALID_RD_REQUEST = 4,
};

/* RNR NAK timer codes, in microseconds (code 0 is the longest). */
static const __u32 xr_rnr_timer_us[32] = {
	655360, 10,    20,    30,    40,    60,    80,     120,    160,    240,    320,
	480,	640,   960,   1280,  1920,  2560,  3840,   5120,   7680,   10240,  15360,
	20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* IB path MTU enum, as in ibv_mtu: 1 = 256 ... 5 = 4096. */
static inline __u32 xr_mtu_bytes(int mtu_enum)
{
	return (mtu_enum >= 1 && mtu_enum <= 5) ? 128u << mtu_enum : 0;
}

#endif /* XROCE_WIRE_H */
