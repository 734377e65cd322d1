// SPDX-License-Identifier: MIT
/*
 * libibverbs drop-in: what iWARP (or this stack) does not have, and the
 * pure helpers (enum strings, rate conversions, fork support).
 *
 * iWARP has no UD QPs, so no address handles and no multicast; memory
 * import and dma-buf MRs are unsupported (EOPNOTSUPP). Each entry point
 * fails in the way rdma-core documents for it, so callers take their
 * "not supported" path instead of crashing.
 */
#include <errno.h>
#include <stddef.h>

#include "ibverbs_priv.h"

#define __unused __attribute__((unused))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------- AH / mcast --- */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd __unused,
			     struct ibv_ah_attr *attr __unused)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd __unused,
				     struct ibv_wc *wc __unused,
				     struct ibv_grh *grh __unused,
				     uint8_t port_num __unused)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_init_ah_from_wc(struct ibv_context *context __unused,
			uint8_t port_num __unused, struct ibv_wc *wc __unused,
			struct ibv_grh *grh __unused,
			struct ibv_ah_attr *ah_attr __unused)
{
	errno = EOPNOTSUPP;
	return -1;
}

int ibv_destroy_ah(struct ibv_ah *ah __unused)
{
	return EOPNOTSUPP;
}

int ibv_attach_mcast(struct ibv_qp *qp __unused,
		     const union ibv_gid *gid __unused, uint16_t lid __unused)
{
	return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp __unused,
		     const union ibv_gid *gid __unused, uint16_t lid __unused)
{
	return EOPNOTSUPP;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context __unused,
				struct ibv_ah_attr *attr __unused,
				uint8_t eth_mac[ETHERNET_LL_SIZE] __unused,
				uint16_t *vid __unused)
{
	return EOPNOTSUPP;
}

/* ------------------------------------------------- import / dma-buf --- */

struct ibv_pd *ibv_import_pd(struct ibv_context *context __unused,
			     uint32_t pd_handle __unused)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd __unused)
{
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd __unused,
			     uint32_t mr_handle __unused)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr __unused)
{
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context __unused,
			     uint32_t dm_handle __unused)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm __unused)
{
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd __unused,
				 uint64_t offset __unused, size_t length __unused,
				 uint64_t iova __unused, int fd __unused,
				 int access __unused)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* ------------------------------------------------------------ QP misc --- */

int ibv_set_ece(struct ibv_qp *qp __unused, struct ibv_ece *ece __unused)
{
	return EOPNOTSUPP;
}

int ibv_query_ece(struct ibv_qp *qp __unused, struct ibv_ece *ece __unused)
{
	return EOPNOTSUPP;
}

/* 0 = "not guaranteed": the safe answer; callers then wait for the CQE. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp __unused,
			       enum ibv_wr_opcode op __unused,
			       uint32_t flags __unused)
{
	return 0;
}

/* ------------------------------------------------------------- fork --- */

/*
 * Registered memory is not pinned by any kernel driver here: a forked
 * child gets ordinary copy-on-write pages, so fork needs no preparation.
 */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base __unused, size_t size __unused)
{
	return 0;
}

int ibv_dofork_range(void *base __unused, size_t size __unused)
{
	return 0;
}

/* ---------------------------------------------------------- strings --- */

static const char *str_at(const char *const *tbl, size_t n, long i,
			  const char *dflt)
{
	return i >= 0 && (size_t)i < n && tbl[i] ? tbl[i] : dflt;
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const s[] = {
		[IBV_NODE_CA]		= "InfiniBand channel adapter",
		[IBV_NODE_SWITCH]	= "InfiniBand switch",
		[IBV_NODE_ROUTER]	= "InfiniBand router",
		[IBV_NODE_RNIC]		= "iWARP NIC",
		[IBV_NODE_USNIC]	= "usNIC",
		[IBV_NODE_USNIC_UDP]	= "usNIC UDP",
		[IBV_NODE_UNSPECIFIED]	= "unspecified",
	};

	return str_at(s, ARRAY_SIZE(s), node_type, "unknown");
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const s[] = {
		[IBV_PORT_NOP]		= "PORT_NOP",
		[IBV_PORT_DOWN]		= "PORT_DOWN",
		[IBV_PORT_INIT]		= "PORT_INIT",
		[IBV_PORT_ARMED]	= "PORT_ARMED",
		[IBV_PORT_ACTIVE]	= "PORT_ACTIVE",
		[IBV_PORT_ACTIVE_DEFER]	= "PORT_ACTIVE_DEFER",
	};

	return str_at(s, ARRAY_SIZE(s), port_state, "invalid state");
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const s[] = {
		[IBV_EVENT_CQ_ERR]		= "CQ error",
		[IBV_EVENT_QP_FATAL]		= "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR]		= "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR]	= "local access violation work queue error",
		[IBV_EVENT_COMM_EST]		= "communication established",
		[IBV_EVENT_SQ_DRAINED]		= "send queue drained",
		[IBV_EVENT_PATH_MIG]		= "path migrated",
		[IBV_EVENT_PATH_MIG_ERR]	= "path migration request error",
		[IBV_EVENT_DEVICE_FATAL]	= "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE]		= "port active",
		[IBV_EVENT_PORT_ERR]		= "port error",
		[IBV_EVENT_LID_CHANGE]		= "LID change",
		[IBV_EVENT_PKEY_CHANGE]		= "P_Key change",
		[IBV_EVENT_SM_CHANGE]		= "SM change",
		[IBV_EVENT_SRQ_ERR]		= "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED]	= "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED]	= "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER]	= "client reregistration",
		[IBV_EVENT_GID_CHANGE]		= "GID table change",
		[IBV_EVENT_WQ_FATAL]		= "WQ fatal",
	};

	return str_at(s, ARRAY_SIZE(s), event, "unknown");
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const s[] = {
		[IBV_WC_SUCCESS]		= "success",
		[IBV_WC_LOC_LEN_ERR]		= "local length error",
		[IBV_WC_LOC_QP_OP_ERR]		= "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR]		= "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR]		= "local protection error",
		[IBV_WC_WR_FLUSH_ERR]		= "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR]		= "memory management operation error",
		[IBV_WC_BAD_RESP_ERR]		= "bad response error",
		[IBV_WC_LOC_ACCESS_ERR]		= "local access error",
		[IBV_WC_REM_INV_REQ_ERR]	= "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR]		= "remote access error",
		[IBV_WC_REM_OP_ERR]		= "remote operation error",
		[IBV_WC_RETRY_EXC_ERR]		= "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR]	= "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR]	= "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR]	= "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR]		= "aborted error",
		[IBV_WC_INV_EECN_ERR]		= "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR]	= "invalid EE context state",
		[IBV_WC_FATAL_ERR]		= "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR]	= "response timeout error",
		[IBV_WC_GENERAL_ERR]		= "general error",
		[IBV_WC_TM_ERR]			= "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE]	= "TM software rendezvous",
	};

	return str_at(s, ARRAY_SIZE(s), status, "unknown");
}

/* ------------------------------------------------------------- rates --- */

/* mult: multiple of 2.5 Gb/s (-1: not a multiple); mbps: signalling rate. */
static const struct { enum ibv_rate rate; int mult; int mbps; } rates[] = {
	{ IBV_RATE_2_5_GBPS,	1,	2500 },
	{ IBV_RATE_5_GBPS,	2,	5000 },
	{ IBV_RATE_10_GBPS,	4,	10000 },
	{ IBV_RATE_20_GBPS,	8,	20000 },
	{ IBV_RATE_30_GBPS,	12,	30000 },
	{ IBV_RATE_40_GBPS,	16,	40000 },
	{ IBV_RATE_60_GBPS,	24,	60000 },
	{ IBV_RATE_80_GBPS,	32,	80000 },
	{ IBV_RATE_120_GBPS,	48,	120000 },
	{ IBV_RATE_14_GBPS,	-1,	14062 },
	{ IBV_RATE_56_GBPS,	-1,	56250 },
	{ IBV_RATE_112_GBPS,	-1,	112500 },
	{ IBV_RATE_168_GBPS,	-1,	168750 },
	{ IBV_RATE_25_GBPS,	10,	25781 },
	{ IBV_RATE_100_GBPS,	40,	103125 },
	{ IBV_RATE_200_GBPS,	80,	206250 },
	{ IBV_RATE_300_GBPS,	120,	309375 },
	{ IBV_RATE_28_GBPS,	11,	28125 },
	{ IBV_RATE_50_GBPS,	20,	53125 },
	{ IBV_RATE_400_GBPS,	160,	425000 },
	{ IBV_RATE_600_GBPS,	240,	637500 },
	{ IBV_RATE_800_GBPS,	320,	850000 },
	{ IBV_RATE_1200_GBPS,	480,	1275000 },
};

int ibv_rate_to_mult(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rates); i++)
		if (rates[i].rate == rate)
			return rates[i].mult;
	return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rates); i++)
		if (rates[i].mult == mult && mult > 0)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rates); i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rates); i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}
