// SPDX-License-Identifier: MIT
/*
 * xiw_remerr — does a TERMINATE from the peer give the right error
 * completion? A small rdma_cm + verbs client (public API only) for the
 * siw interop tier (tests/interop/siw_interop.sh).
 *
 *   xiw_remerr [-o read|write] [-t SEC] [-k RKEY] [-s MS] [-a] HOST PORT
 *
 * Connects to an iWARP acceptor that will not expect anything in
 * particular first (a siw `rping -s` in the guest works), then posts ONE
 * signalled RDMA READ (default) or RDMA WRITE whose remote STag (rkey) is
 * invalid at the peer (default 0x00dead00). The peer must answer with a
 * TERMINATE. Expected:
 *   read:  the READ completes with IBV_WC_REM_ACCESS_ERR;
 *   write: some WC of the QP completes with IBV_WC_REM_ACCESS_ERR (the
 *          WRITE itself, or — when the WRITE already completed locally
 *          before the TERMINATE came — a signalled READ posted after it,
 *          which the TERMINATE then fails);
 * and afterwards the QP is in IBV_QPS_ERR (ibv_query_qp). -a also accepts
 * IBV_WC_REM_OP_ERR: siw 6.1 lays out the TERMINATE control word with
 * little-endian bitfields, so its "RDMAP / remote protection / invalid
 * STag" for a READ arrives as layer 1 (DDP) etype 0 (catastrophic) with
 * the M/D/R bits in the reserved field, which a receiver that follows
 * RFC 5040 maps to a remote operation error.
 * Prints every WC ("wc: op ... status N (text)") and "qp_state=N".
 *
 * Exit: 0 expected outcome, 1 not, 2 setup error (connect failed ...).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

#define BUFSZ 4096

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int get_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		     struct rdma_cm_id **id_out)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int status;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("remerr: rdma_get_cm_event");
		return -1;
	}
	got = ev->event;
	status = ev->status;
	if (id_out)
		*id_out = ev->id;
	rdma_ack_cm_event(ev);
	if (got != want) {
		fprintf(stderr, "remerr: cm event %s (status %d), wanted %s\n",
			rdma_event_str(got), status, rdma_event_str(want));
		return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: xiw_remerr [-o read|write] [-t SEC] [-k RKEY] [-s MS] [-a] HOST PORT\n"
"Connect over rdma_cm to an iWARP acceptor (e.g. siw's rping -s), post one\n"
"signalled RDMA READ or WRITE with an rkey the peer does not know, and check\n"
"that the peer's TERMINATE fails it with IBV_WC_REM_ACCESS_ERR and that the\n"
"QP ends in IBV_QPS_ERR.\n"
"  -o, --op read|write  operation (default read)\n"
"  -k, --rkey RKEY      remote STag to use (default 0x00dead00)\n"
"  -t, --timeout SEC    wait this long for the error completion (default 10)\n"
"  -a, --any-remote     accept IBV_WC_REM_OP_ERR too (siw 6.1's TERMINATE for\n"
"                       a READ has its layer/etype nibbles swapped)\n"
"  -s, --settle MS      wait this long after ESTABLISHED before posting, so\n"
"                       the peer has finished its accept (default 300)\n"
"  -h, --help           this text\n"
"Exit: 0 expected outcome, 1 not, 2 setup error.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "op", required_argument, NULL, 'o' },
		{ "rkey", required_argument, NULL, 'k' },
		{ "timeout", required_argument, NULL, 't' },
		{ "any-remote", no_argument, NULL, 'a' },
		{ "settle", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *op = "read";
	uint32_t rkey = 0x00dead00;
	double tmo = 10;
	int c, any_remote = 0, settle_ms = 300;

	while ((c = getopt_long(argc, argv, "o:k:t:as:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o': op = optarg; break;
		case 'k': rkey = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': tmo = atof(optarg); break;
		case 'a': any_remote = 1; break;
		case 's': settle_ms = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind != 2 || (strcmp(op, "read") && strcmp(op, "write"))) {
		usage(stderr);
		return 2;
	}
	int is_read = !strcmp(op, "read");

	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	if (getaddrinfo(argv[optind], argv[optind + 1], &hints, &ai)) {
		fprintf(stderr, "remerr: cannot resolve %s:%s\n", argv[optind], argv[optind + 1]);
		return 2;
	}
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("remerr: rdma_create_id");
		return 2;
	}
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 5000) ||
	    get_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(id, 5000) ||
	    get_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL)) {
		fprintf(stderr, "remerr: address/route resolution failed\n");
		return 2;
	}
	freeaddrinfo(ai);

	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq = pd ? ibv_create_cq(id->verbs, 16, NULL, NULL, 0) : NULL;
	uint8_t *buf = calloc(1, BUFSZ);
	struct ibv_mr *mr = cq && buf ? ibv_reg_mr(pd, buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!mr) {
		perror("remerr: pd/cq/mr");
		return 2;
	}
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (rdma_create_qp(id, pd, &qa)) {
		perror("remerr: rdma_create_qp");
		return 2;
	}
	struct rdma_conn_param cp = { .initiator_depth = 1, .responder_resources = 1,
				      .retry_count = 7 };
	if (rdma_connect(id, &cp) || get_event(ch, RDMA_CM_EVENT_ESTABLISHED, NULL)) {
		fprintf(stderr, "remerr: connect failed\n");
		return 2;
	}
	/*
	 * Let the peer finish its accept first: siw answers the bad WRITE
	 * with a TERMINATE and closes, and when that close overtakes its own
	 * ESTABLISHED (siw processes FPDUs that were queued during its accept
	 * at once) Linux 6.1's iw_cm BUGs (iwcm.c:969). Our RTR nudges make
	 * siw read the RTR within 10-70 ms.
	 */
	usleep(settle_ms * 1000);
	printf("connected; posting a signalled RDMA %s with rkey 0x%08x\n",
	       is_read ? "READ" : "WRITE", rkey);

	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
		.opcode = is_read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = 0x1000, .rkey = rkey },
	}, *bad;
	int rv = ibv_post_send(id->qp, &wr, &bad);
	if (rv) {
		fprintf(stderr, "remerr: ibv_post_send: %s\n", strerror(rv));
		return 1;
	}
	double t0 = now_s(), t_err = 0;
	int n = 0, err_wr = 0, posted_read = 0, own_status = -1;
	while (now_s() - t0 < tmo && !err_wr) {
		struct ibv_wc wc;
		int k = ibv_poll_cq(cq, 1, &wc);

		if (k < 0) {
			fprintf(stderr, "remerr: ibv_poll_cq failed\n");
			return 1;
		}
		if (k == 0) {
			usleep(1000);
			continue;
		}
		n++;
		printf("wc: wr_id %llu opcode %d status %d (%s) after %.3f s\n",
		       (unsigned long long)wc.wr_id, wc.opcode, wc.status,
		       ibv_wc_status_str(wc.status), now_s() - t0);
		if (wc.wr_id == 1)
			own_status = wc.status;
		if (wc.status == IBV_WC_REM_ACCESS_ERR ||
		    (any_remote && wc.status == IBV_WC_REM_OP_ERR)) {
			err_wr = (int)wc.wr_id;
			t_err = now_s() - t0;
		} else if (wc.status == IBV_WC_SUCCESS && !is_read && !posted_read) {
			/* the WRITE completed locally before the TERMINATE:
			 * a READ after it must be failed by that TERMINATE */
			struct ibv_send_wr rd = wr;

			rd.wr_id = 2;
			rd.opcode = IBV_WR_RDMA_READ;
			rv = ibv_post_send(id->qp, &rd, &bad);
			printf("write completed locally first; posted a READ behind it (%s)\n",
			       rv ? strerror(rv) : "ok");
			posted_read = 1;
		}
	}
	/* give the QP a moment to reach ERROR if the WC came first */
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr ia;
	int state = -1;
	for (int i = 0; i < 200; i++) {
		if (ibv_query_qp(id->qp, &attr, IBV_QP_STATE, &ia) == 0)
			state = attr.qp_state;
		if (state == IBV_QPS_ERR)
			break;
		usleep(10000);
	}
	printf("wcs=%d error_wr=%d own_status=%d error_after=%.3f qp_state=%d%s\n", n, err_wr,
	       own_status, t_err, state, state == IBV_QPS_ERR ? " (IBV_QPS_ERR)" : "");
	int ok = err_wr != 0 && state == IBV_QPS_ERR && (!is_read || err_wr == 1);
	printf("%s: RDMA %s with an invalid rkey: %s\n", ok ? "OK" : "FAIL",
	       is_read ? "READ" : "WRITE",
	       ok ? "remote error WC and QP in ERROR" :
	       "no IBV_WC_REM_ACCESS_ERR / QP not in ERROR");
	rdma_disconnect(id);
	return ok ? 0 : 1;
}
