/* SPDX-License-Identifier: MIT */
/*
 * helpers DIR [xroce]: built against Debian's -libverbs like any
 * application; needs no device. Checks libibverbs' device-free helpers that
 * librdmacm and the tools call:
 *   - ibv_copy_{qp,ah}_attr_from_kern and ibv_copy_path_rec_{from,to}_kern
 *     carry every field (each source field holds its own value, so a field
 *     dropped, swapped or truncated shows) and leave qp_state alone;
 *   - ibv_get_sysfs_path takes $SYSFS_PATH without its trailing slashes,
 *     once per process;
 *   - ibv_read_sysfs_file (files written under DIR): the first line without
 *     its newline, the length, -1 when the contents would not fit.
 * The same binary passes on Debian's libibverbs and on xroce's: the two
 * agree. With "xroce" it also checks the IBVERBS_1.0 ABI, which offers no
 * device on xroce. Prints "helpers: ok: N checks" and exits 0, or names the
 * first failure.
 */
#include <errno.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rdma-core's <infiniband/marshall.h> and <infiniband/driver.h>, which Debian does not ship. */
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

/* The device list of the libibverbs 1.0 ABI, bound at its old version. */
__asm__(".symver v1_0_get_device_list, ibv_get_device_list@IBVERBS_1.0");
__asm__(".symver v1_0_free_device_list, ibv_free_device_list@IBVERBS_1.0");
void **v1_0_get_device_list(int *num_devices);
void v1_0_free_device_list(void **list);

#define CHECK_PROGRAM "helpers"
#include "../check.h"

#define SAME(a, b)                                                                                 \
	CHECK((unsigned long long)(a) == (unsigned long long)(b), "%s is %llu, expected %llu", #a, \
	      (unsigned long long)(a), (unsigned long long)(b))

static void fill_ah(struct ib_uverbs_ah_attr *k, unsigned base)
{
	for (unsigned i = 0; i < 16; i++)
		k->grh.dgid[i] = (unsigned char)(base + i);
	k->grh.flow_label = 0xabcde + base;
	k->grh.sgid_index = base + 17;
	k->grh.hop_limit = base + 18;
	k->grh.traffic_class = base + 19;
	k->dlid = 0x1234 + base;
	k->sl = base + 20;
	k->src_path_bits = base + 21;
	k->static_rate = base + 22;
	k->is_global = 1;
	k->port_num = base + 23;
}

static void check_ah(const struct ibv_ah_attr *v, const struct ib_uverbs_ah_attr *k)
{
	CHECK(!memcmp(v->grh.dgid.raw, k->grh.dgid, 16), "ah dgid differs");
	SAME(v->grh.flow_label, k->grh.flow_label);
	SAME(v->grh.sgid_index, k->grh.sgid_index);
	SAME(v->grh.hop_limit, k->grh.hop_limit);
	SAME(v->grh.traffic_class, k->grh.traffic_class);
	SAME(v->dlid, k->dlid);
	SAME(v->sl, k->sl);
	SAME(v->src_path_bits, k->src_path_bits);
	SAME(v->static_rate, k->static_rate);
	SAME(v->is_global, k->is_global);
	SAME(v->port_num, k->port_num);
}

static void check_qp_attr(void)
{
	struct ib_uverbs_qp_attr k = {.qp_state = IBV_QPS_RTS,
				      .cur_qp_state = IBV_QPS_RTR,
				      .path_mtu = IBV_MTU_1024,
				      .path_mig_state = IBV_MIG_ARMED,
				      .qkey = 0x11112222,
				      .rq_psn = 0x123456,
				      .sq_psn = 0x654321,
				      .dest_qp_num = 0xabcdef,
				      .qp_access_flags = 0x0f,
				      .max_send_wr = 101,
				      .max_recv_wr = 102,
				      .max_send_sge = 103,
				      .max_recv_sge = 104,
				      .max_inline_data = 105,
				      .pkey_index = 106,
				      .alt_pkey_index = 107,
				      .en_sqd_async_notify = 1,
				      .sq_draining = 1,
				      .max_rd_atomic = 108,
				      .max_dest_rd_atomic = 109,
				      .min_rnr_timer = 110,
				      .port_num = 111,
				      .timeout = 112,
				      .retry_cnt = 7,
				      .rnr_retry = 6,
				      .alt_port_num = 113,
				      .alt_timeout = 114};
	struct ibv_qp_attr v;

	fill_ah(&k.ah_attr, 1);
	fill_ah(&k.alt_ah_attr, 100);
	memset(&v, 0xee, sizeof(v));
	ibv_copy_qp_attr_from_kern(&v, &k);
	CHECK(v.qp_state == (enum ibv_qp_state)0xeeeeeeee, "qp_state was copied: %u", v.qp_state);
	SAME(v.cur_qp_state, k.cur_qp_state);
	SAME(v.path_mtu, k.path_mtu);
	SAME(v.path_mig_state, k.path_mig_state);
	SAME(v.qkey, k.qkey);
	SAME(v.rq_psn, k.rq_psn);
	SAME(v.sq_psn, k.sq_psn);
	SAME(v.dest_qp_num, k.dest_qp_num);
	SAME(v.qp_access_flags, k.qp_access_flags);
	SAME(v.cap.max_send_wr, k.max_send_wr);
	SAME(v.cap.max_recv_wr, k.max_recv_wr);
	SAME(v.cap.max_send_sge, k.max_send_sge);
	SAME(v.cap.max_recv_sge, k.max_recv_sge);
	SAME(v.cap.max_inline_data, k.max_inline_data);
	check_ah(&v.ah_attr, &k.ah_attr);
	check_ah(&v.alt_ah_attr, &k.alt_ah_attr);
	SAME(v.pkey_index, k.pkey_index);
	SAME(v.alt_pkey_index, k.alt_pkey_index);
	SAME(v.en_sqd_async_notify, k.en_sqd_async_notify);
	SAME(v.sq_draining, k.sq_draining);
	SAME(v.max_rd_atomic, k.max_rd_atomic);
	SAME(v.max_dest_rd_atomic, k.max_dest_rd_atomic);
	SAME(v.min_rnr_timer, k.min_rnr_timer);
	SAME(v.port_num, k.port_num);
	SAME(v.timeout, k.timeout);
	SAME(v.retry_cnt, k.retry_cnt);
	SAME(v.rnr_retry, k.rnr_retry);
	SAME(v.alt_port_num, k.alt_port_num);
	SAME(v.alt_timeout, k.alt_timeout);
}

static void check_path_rec(void)
{
	struct ib_user_path_rec k = {.dlid = 0x0102,
				     .slid = 0x0304,
				     .raw_traffic = 1,
				     .flow_label = 0x05060708,
				     .reversible = 1,
				     .mtu = IBV_MTU_4096,
				     .pkey = 0xffff,
				     .hop_limit = 9,
				     .traffic_class = 10,
				     .numb_path = 11,
				     .sl = 12,
				     .mtu_selector = 2,
				     .rate_selector = 2,
				     .rate = 13,
				     .packet_life_time_selector = 2,
				     .packet_life_time = 14,
				     .preference = 15};
	struct ib_user_path_rec back;
	struct ibv_sa_path_rec v;

	for (unsigned i = 0; i < 16; i++) {
		k.dgid[i] = (unsigned char)(0x40 + i);
		k.sgid[i] = (unsigned char)(0x80 + i);
	}
	memset(&v, 0xee, sizeof(v));
	ibv_copy_path_rec_from_kern(&v, &k);
	CHECK(!memcmp(v.dgid.raw, k.dgid, 16) && !memcmp(v.sgid.raw, k.sgid, 16),
	      "path record GIDs differ");
	SAME(v.dlid, k.dlid);
	SAME(v.slid, k.slid);
	SAME(v.raw_traffic, k.raw_traffic);
	SAME(v.flow_label, k.flow_label);
	SAME(v.reversible, k.reversible);
	SAME(v.mtu, k.mtu);
	SAME(v.pkey, k.pkey);
	SAME(v.hop_limit, k.hop_limit);
	SAME(v.traffic_class, k.traffic_class);
	SAME(v.numb_path, k.numb_path);
	SAME(v.sl, k.sl);
	SAME(v.mtu_selector, k.mtu_selector);
	SAME(v.rate_selector, k.rate_selector);
	SAME(v.rate, k.rate);
	SAME(v.packet_life_time_selector, k.packet_life_time_selector);
	SAME(v.packet_life_time, k.packet_life_time);
	SAME(v.preference, k.preference);

	/* And back: the kernel's record comes out whole, reserved bytes aside. */
	memset(&back, 0, sizeof(back));
	ibv_copy_path_rec_to_kern(&back, &v);
	CHECK(!memcmp(&back, &k, sizeof(k)), "path record to_kern(from_kern(x)) != x");
}

static void check_sysfs_path(void)
{
	const char *path;

	setenv("SYSFS_PATH", "/tmp/xroce-sysfs//", 1);
	path = ibv_get_sysfs_path();
	CHECK(path && !strcmp(path, "/tmp/xroce-sysfs"), "SYSFS_PATH=/tmp/xroce-sysfs//: '%s'",
	      path ? path : "(null)");
	setenv("SYSFS_PATH", "/elsewhere", 1);
	CHECK(ibv_get_sysfs_path() == path, "the path changed after its first use");
	unsetenv("SYSFS_PATH");
}

static void write_file(const char *dir, const char *name, const char *contents)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f && fputs(contents, f) >= 0 && !fclose(f), "cannot write %s", path);
}

static void check_read_sysfs_file(const char *dir)
{
	char buf[8];

	write_file(dir, "line", "abc\n");
	write_file(dir, "bare", "abcd");
	write_file(dir, "full", "abcdefgh");
	write_file(dir, "empty", "");
	CHECK(ibv_read_sysfs_file(dir, "line", buf, sizeof(buf)) == 3 && !strcmp(buf, "abc"),
	      "line: '%s'", buf);
	CHECK(ibv_read_sysfs_file(dir, "bare", buf, sizeof(buf)) == 4 && !strcmp(buf, "abcd"),
	      "bare: '%s'", buf);
	CHECK(ibv_read_sysfs_file(dir, "full", buf, sizeof(buf)) == -1,
	      "8 bytes into 8 with no room for the NUL did not fail");
	CHECK(ibv_read_sysfs_file(dir, "empty", buf, sizeof(buf)) == 0, "empty: not 0");
	CHECK(ibv_read_sysfs_file(dir, "absent", buf, sizeof(buf)) == -1, "absent: not -1");
}

static void check_v1_0_abi(void)
{
	int n = -1;
	void **list = v1_0_get_device_list(&n);

	CHECK(list && n == 0 && !list[0], "IBVERBS_1.0 device list: %p, %d devices", (void *)list,
	      n);
	v1_0_free_device_list(list);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: helpers DIR [xroce]\n");
		return 2;
	}
	check_qp_attr();
	check_path_rec();
	check_sysfs_path();
	check_read_sysfs_file(argv[1]);
	if (argc > 2 && !strcmp(argv[2], "xroce"))
		check_v1_0_abi();
	CHECK_SUMMARY();
	return 0;
}
