// SPDX-License-Identifier: MIT
/* Devices: enumeration (lo -> "xiw_lo"), lookup by address, query values. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include "xiwarp/xiwarp.h"

static struct xiw_device *find_lo(void)
{
	struct xiw_device **devs;
	int n = xiw_device_list(&devs);

	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		if (!strcmp(devs[i]->name, "xiw_lo"))
			return devs[i];
	return NULL;
}

static void test_list_has_lo(void **state)
{
	struct xiw_device *lo = find_lo();
	struct xiw_device **devs;
	int n;

	(void)state;
	assert_non_null(lo);
	assert_string_equal(lo->ifname, "lo");
	assert_true(lo->ifindex > 0);
	assert_true(lo->mtu >= 1280);
	/* rescans return the same device objects */
	n = xiw_device_list(&devs);
	assert_true(n >= 1);
	assert_ptr_equal(find_lo(), lo);
}

static void test_by_addr(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct xiw_device *lo = find_lo();

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_ptr_equal(xiw_device_by_addr((struct sockaddr *)&a), lo);
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	assert_ptr_equal(xiw_device_by_addr((struct sockaddr *)&a), lo);
	a.sin_addr.s_addr = htonl(0x7f000102);	/* 127.0.1.2 */
	assert_ptr_equal(xiw_device_by_addr((struct sockaddr *)&a), lo);
	a6.sin6_addr = in6addr_loopback;
	assert_ptr_equal(xiw_device_by_addr((struct sockaddr *)&a6), lo);
	/* TEST-NET-3: nobody owns it */
	a.sin_addr.s_addr = htonl(0xcb007101);
	errno = 0;
	assert_null(xiw_device_by_addr((struct sockaddr *)&a));
	assert_int_equal(errno, ENODEV);
}

static void test_query(void **state)
{
	struct xiw_device *lo = find_lo();
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;

	(void)state;
	xiw_device_query(lo, &da);
	assert_string_equal(da.fw_ver, "xiwarp 0.1");
	assert_int_equal(da.max_qp_wr, XIW_MAX_QP_WR);
	assert_int_equal(da.max_sge, XIW_MAX_SGE);
	assert_int_equal(da.max_cqe, XIW_MAX_CQE);
	assert_int_equal(da.max_qp_rd_atom, XIW_MAX_IRD);
	assert_int_equal(da.max_qp_init_rd_atom, XIW_MAX_ORD);
	assert_int_equal(da.atomic_cap, IBV_ATOMIC_HCA);	/* RFC 7306 */
	assert_true(da.max_srq > 0 && da.max_srq_wr == XIW_MAX_QP_WR);
	assert_int_equal(da.phys_port_cnt, 1);
	assert_true(da.max_mr_size == XIW_MAX_MR_SIZE);
	assert_true(da.node_guid == lo->node_guid);

	xiw_port_query(lo, &pa);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.gid_tbl_len, 1);
	assert_int_equal(pa.pkey_tbl_len, 1);
	assert_int_equal(pa.active_mtu, IBV_MTU_4096);	/* lo MTU 65536 */

	xiw_device_gid(lo, &gid);
	assert_memory_equal(gid.raw, lo->mac, 6);
	for (int i = 6; i < 16; i++)
		assert_int_equal(gid.raw[i], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_has_lo),
		cmocka_unit_test(test_by_addr),
		cmocka_unit_test(test_query),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
