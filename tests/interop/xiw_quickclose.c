// SPDX-License-Identifier: MIT
/*
 * xiw_quickclose — close a connection the moment it is ESTABLISHED, many
 * times over, against an iWARP acceptor (a siw `rping -s -P` in the guest
 * of tests/interop/siw_interop.sh). Public rdma_cm + verbs API only.
 *
 *   xiw_quickclose [-n COUNT] [-m disconnect|destroy] HOST PORT
 *
 * The acceptor may still be inside its accept when the close arrives
 * (siw completes the accept only after it has read the RTR); a close
 * event there made Linux 6.1's iw_cm BUG (iwcm.c:969). The tier checks
 * the guest kernel afterwards; this tool checks that every connect got
 * ESTABLISHED and every close finished.
 *   disconnect: rdma_disconnect() at once, wait for DISCONNECTED, destroy.
 *   destroy:    destroy QP and id at once, no rdma_disconnect().
 *
 * Exit: 0 all COUNT connections established and closed, 1 some failed,
 * 2 usage or setup error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

static int next_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("quickclose: rdma_get_cm_event");
		return -1;
	}
	got = ev->event;
	rdma_ack_cm_event(ev);
	if (got == want)
		return 0;
	fprintf(stderr, "quickclose: cm event %s, wanted %s\n",
		rdma_event_str(got), rdma_event_str(want));
	return -1;
}

/* One connection: connect, close at once as @mode says. Return 0 or -1. */
static int one(struct rdma_event_channel *ch, struct addrinfo *ai, int destroy)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1, .retry_count = 7 };
	struct rdma_cm_id *id;
	int rc = -1;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return -1;
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 5000) ||
	    next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED) ||
	    rdma_resolve_route(id, 5000) ||
	    next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED) ||
	    rdma_create_qp(id, NULL, &qa))
		goto out;
	if (rdma_connect(id, &cp) || next_event(ch, RDMA_CM_EVENT_ESTABLISHED))
		goto out_qp;
	if (!destroy && (rdma_disconnect(id) ||
			 next_event(ch, RDMA_CM_EVENT_DISCONNECTED)))
		goto out_qp;
	rc = 0;
out_qp:
	rdma_destroy_qp(id);
out:
	rdma_destroy_id(id);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: xiw_quickclose [-n COUNT] [-m disconnect|destroy] HOST PORT\n"
"Connect over rdma_cm COUNT times and close each connection the moment it\n"
"is ESTABLISHED: by rdma_disconnect() (default) or by destroying the QP\n"
"and id without a disconnect.\n"
"  -n, --count COUNT   connections (default 20)\n"
"  -m, --mode MODE     disconnect | destroy\n"
"  -h, --help          this text\n"
"Exit: 0 all established and closed, 1 some failed, 2 usage/setup error.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "mode", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_event_channel *ch;
	int c, n = 20, destroy = 0, ok = 0;

	while ((c = getopt_long(argc, argv, "n:m:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 'm':
			if (strcmp(optarg, "disconnect") && strcmp(optarg, "destroy")) {
				usage(stderr);
				return 2;
			}
			destroy = !strcmp(optarg, "destroy");
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind != 2 || n <= 0) {
		usage(stderr);
		return 2;
	}
	if (getaddrinfo(argv[optind], argv[optind + 1], &hints, &ai)) {
		fprintf(stderr, "quickclose: cannot resolve %s:%s\n",
			argv[optind], argv[optind + 1]);
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("quickclose: rdma_create_event_channel");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		if (one(ch, ai, destroy))
			fprintf(stderr, "quickclose: connection %d failed\n", i + 1);
		else
			ok++;
	}
	printf("quickclose: %d of %d connections established and closed (%s)\n",
	       ok, n, destroy ? "destroy" : "disconnect");
	freeaddrinfo(ai);
	rdma_destroy_event_channel(ch);
	return ok == n ? 0 : 1;
}
