/* SPDX-License-Identifier: MIT */
/*
 * librdmacm's entry points xroce does not implement, each failing by its
 * own convention (-1 with errno ENOSYS), so that a program linked against
 * them loads and learns at the call:
 *   - rsockets (rsocket, rbind, ... riowrite): sockets over RDMA, a
 *     protocol of librdmacm's own that xroce does not speak;
 *   - ECE (rdma_set_local_ece, rdma_get_remote_ece, rdma_reject_ece): the
 *     enhanced connection establishment of mlx5 devices;
 *   - rdma_init_qp_attr: the attributes for moving a QP of the
 *     application's own, which libxroce's CM keeps to itself;
 *   - rdma_notify: the kernel CM's hint that a QP saw its first packet.
 * The arguments are never read, so they are left undeclared.
 */
#include <errno.h>
#include <sys/types.h>

#define RC_FAILS_MINUS1(name)                                                                      \
	int name(void);                                                                            \
	int name(void)                                                                             \
	{                                                                                          \
		errno = ENOSYS;                                                                    \
		return -1;                                                                         \
	}

RC_FAILS_MINUS1(raccept)
RC_FAILS_MINUS1(rbind)
RC_FAILS_MINUS1(rclose)
RC_FAILS_MINUS1(rconnect)
RC_FAILS_MINUS1(rfcntl)
RC_FAILS_MINUS1(rgetpeername)
RC_FAILS_MINUS1(rgetsockname)
RC_FAILS_MINUS1(rgetsockopt)
RC_FAILS_MINUS1(riounmap)
RC_FAILS_MINUS1(rlisten)
RC_FAILS_MINUS1(rpoll)
RC_FAILS_MINUS1(rselect)
RC_FAILS_MINUS1(rsetsockopt)
RC_FAILS_MINUS1(rshutdown)
RC_FAILS_MINUS1(rsocket)
RC_FAILS_MINUS1(rdma_set_local_ece)
RC_FAILS_MINUS1(rdma_get_remote_ece)
RC_FAILS_MINUS1(rdma_reject_ece)
RC_FAILS_MINUS1(rdma_init_qp_attr)
RC_FAILS_MINUS1(rdma_notify)

/* Those returning a size: ssize_t -1. */
#define RC_FAILS_SSIZE(name)                                                                       \
	ssize_t name(void);                                                                        \
	ssize_t name(void)                                                                         \
	{                                                                                          \
		errno = ENOSYS;                                                                    \
		return -1;                                                                         \
	}

RC_FAILS_SSIZE(rread)
RC_FAILS_SSIZE(rreadv)
RC_FAILS_SSIZE(rrecv)
RC_FAILS_SSIZE(rrecvfrom)
RC_FAILS_SSIZE(rrecvmsg)
RC_FAILS_SSIZE(rsend)
RC_FAILS_SSIZE(rsendmsg)
RC_FAILS_SSIZE(rsendto)
RC_FAILS_SSIZE(rwrite)
RC_FAILS_SSIZE(rwritev)
RC_FAILS_SSIZE(riowrite)

/* riomap gives an off_t: -1. */
off_t riomap(void);
off_t riomap(void)
{
	errno = ENOSYS;
	return -1;
}
