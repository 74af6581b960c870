/* SPDX-License-Identifier: MIT */
/*
 * A minimal classic-pcap reader for tests: loads a whole capture into memory
 * and walks its records. Handles micro- and nanosecond timestamps in either
 * byte order; pcapng is not supported.
 */
#ifndef XROCE_TESTS_PCAP_READER_H
#define XROCE_TESTS_PCAP_READER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PCAP_MAGIC_USEC 0xa1b2c3d4u
#define PCAP_MAGIC_NSEC 0xa1b23c4du
#define PCAP_FILE_HDR_LEN 24
#define PCAP_REC_HDR_LEN 16
#define PCAP_LINKTYPE_ETHERNET 1

struct pcap_file {
	uint8_t *data;
	size_t len;
	size_t pos;   /* next record header */
	bool swapped; /* written on a host of the other byte order */
	bool nsec;    /* timestamp fraction in nanoseconds, else microseconds */
	uint32_t linktype;
	uint32_t snaplen;
	uint32_t records_read;
};

struct pcap_record {
	const uint8_t *data;
	uint32_t caplen, origlen;
	uint32_t ts_sec, ts_frac;
	uint32_t number; /* 1-based, as tshark's frame.number */
};

static inline uint32_t pcap_u32(const struct pcap_file *pf, const uint8_t *p)
{
	uint32_t v =
	    (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	return pf->swapped ? __builtin_bswap32(v) : v;
}

static inline void pcap_close(struct pcap_file *pf)
{
	free(pf->data);
	pf->data = NULL;
	pf->len = pf->pos = 0;
}

/* Returns 0, or a negative errno (-EPROTO: not a classic pcap file). */
static inline int pcap_open(const char *path, struct pcap_file *pf)
{
	FILE *f = fopen(path, "rb");
	long size;
	uint32_t magic;
	int err = 0;

	*pf = (struct pcap_file){0};
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		err = -errno;
		goto out;
	}
	pf->len = (size_t)size;
	pf->data = malloc(pf->len ? pf->len : 1);
	if (!pf->data) {
		err = -ENOMEM;
		goto out;
	}
	if (fread(pf->data, 1, pf->len, f) != pf->len) {
		err = -EIO;
		goto out;
	}
	if (pf->len < PCAP_FILE_HDR_LEN) {
		err = -EPROTO;
		goto out;
	}
	magic = pcap_u32(pf, pf->data);
	if (magic == __builtin_bswap32(PCAP_MAGIC_USEC) ||
	    magic == __builtin_bswap32(PCAP_MAGIC_NSEC)) {
		pf->swapped = true;
		magic = __builtin_bswap32(magic);
	}
	if (magic != PCAP_MAGIC_USEC && magic != PCAP_MAGIC_NSEC) {
		err = -EPROTO;
		goto out;
	}
	pf->nsec = magic == PCAP_MAGIC_NSEC;
	pf->snaplen = pcap_u32(pf, pf->data + 16);
	pf->linktype = pcap_u32(pf, pf->data + 20);
	pf->pos = PCAP_FILE_HDR_LEN;
out:
	fclose(f);
	if (err)
		pcap_close(pf);
	return err;
}

/* Returns 1 and fills rec, 0 at the end, -EPROTO for a cut or corrupt record. */
static inline int pcap_next(struct pcap_file *pf, struct pcap_record *rec)
{
	const uint8_t *h;

	if (pf->pos == pf->len)
		return 0;
	if (pf->len - pf->pos < PCAP_REC_HDR_LEN)
		return -EPROTO;
	h = pf->data + pf->pos;
	rec->ts_sec = pcap_u32(pf, h);
	rec->ts_frac = pcap_u32(pf, h + 4);
	rec->caplen = pcap_u32(pf, h + 8);
	rec->origlen = pcap_u32(pf, h + 12);
	if (rec->caplen > pf->len - pf->pos - PCAP_REC_HDR_LEN || rec->caplen > rec->origlen)
		return -EPROTO;
	rec->data = h + PCAP_REC_HDR_LEN;
	rec->number = ++pf->records_read;
	pf->pos += PCAP_REC_HDR_LEN + rec->caplen;
	return 1;
}

#endif /* XROCE_TESTS_PCAP_READER_H */
