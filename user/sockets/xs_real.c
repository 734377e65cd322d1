// SPDX-License-Identifier: MIT
/*
 * libxiwsock.so: the libc functions we interpose (dlsym RTLD_NEXT), the
 * XIW_SOCK_* knobs, and what happens at load time and after fork().
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "xs_int.h"

struct xs_real xs_real;
bool xs_ready;
struct xs_knobs xs_kn;
__thread int xs_inside;
bool xs_engine_used, xs_engine_gone;

static pthread_once_t xs_once = PTHREAD_ONCE_INIT;

#define XS_SYM(name) \
	(*(void **)&xs_real.name = dlsym(RTLD_NEXT, #name))

static void xs_resolve(void)
{
	XS_SYM(socket); XS_SYM(bind); XS_SYM(listen); XS_SYM(accept);
	XS_SYM(accept4); XS_SYM(connect); XS_SYM(read); XS_SYM(write);
	XS_SYM(readv); XS_SYM(writev); XS_SYM(recv); XS_SYM(send);
	XS_SYM(recvfrom); XS_SYM(sendto); XS_SYM(recvmsg); XS_SYM(sendmsg);
	XS_SYM(sendfile); XS_SYM(sendfile64); XS_SYM(poll); XS_SYM(ppoll);
	XS_SYM(select); XS_SYM(pselect); XS_SYM(epoll_ctl);
	XS_SYM(epoll_wait); XS_SYM(epoll_pwait); XS_SYM(shutdown);
	XS_SYM(close); XS_SYM(dup); XS_SYM(dup2); XS_SYM(dup3); XS_SYM(fcntl);
	XS_SYM(ioctl); XS_SYM(getsockopt); XS_SYM(setsockopt);
	XS_SYM(getsockname); XS_SYM(getpeername);
}

void xs_log(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	if (!xs_kn.verbose)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (xs_real.write)
		xs_real.write(2, XS_PFX, sizeof(XS_PFX) - 1), xs_real.write(2, buf, (size_t)n);
}

static int xs_env_int(const char *name, int dflt, int max)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return dflt;
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || x < 0 || x > max) {
		fprintf(stderr, XS_PFX "%s=%s is not a number in 0..%d; using %d\n",
			name, v, max, dflt);
		return dflt;
	}
	return (int)x;
}

/* "all" or a comma list of ports and ranges: "5201,6379,7000-7100" */
static void xs_parse_ports(const char *v)
{
	xs_kn.all_ports = !v || !*v || !strcmp(v, "all");
	if (xs_kn.all_ports)
		return;
	while (*v && xs_kn.nranges < 32) {
		char *end;
		long lo = strtol(v, &end, 10), hi = lo;

		if (end == v || lo < 1 || lo > 65535)
			goto bad;
		if (*end == '-') {
			v = end + 1;
			hi = strtol(v, &end, 10);
			if (end == v || hi < lo || hi > 65535)
				goto bad;
		}
		xs_kn.lo[xs_kn.nranges] = (uint16_t)lo;
		xs_kn.hi[xs_kn.nranges++] = (uint16_t)hi;
		v = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			goto bad;
	}
	return;
bad:
	fprintf(stderr, XS_PFX "XIW_SOCK_PORTS: cannot parse '%s' (want all, or PORT[-PORT],...): using all ports\n", v);
	xs_kn.all_ports = true;
}

static void xs_read_knobs(void)
{
	const char *m = getenv("XIW_SOCK_MODE");

	xs_kn.mode = XS_MODE_AUTO;
	if (m && !strcmp(m, "tcp"))
		xs_kn.mode = XS_MODE_TCP;
	else if (m && !strcmp(m, "rdma"))
		xs_kn.mode = XS_MODE_RDMA;
	else if (m && *m && strcmp(m, "auto"))
		fprintf(stderr, XS_PFX "XIW_SOCK_MODE=%s: want auto, rdma or tcp; using auto\n", m);
	xs_kn.accept_wait_ms = xs_env_int("XIW_SOCK_ACCEPT_WAIT_MS", 200, 60000);
	xs_kn.connect_ms = xs_env_int("XIW_SOCK_CONNECT_MS", 3000, 600000);
	xs_kn.verbose = xs_env_int("XIW_SOCK_LOG", 0, 2);
	xs_parse_ports(getenv("XIW_SOCK_PORTS"));
}

bool xs_port_ok(uint16_t port)
{
	if (xs_kn.all_ports)
		return true;
	for (int i = 0; i < xs_kn.nranges; i++)
		if (port >= xs_kn.lo[i] && port <= xs_kn.hi[i])
			return true;
	return false;
}

static void xs_fork_child(void)
{
	/* the engine's threads stayed in the parent */
	if (xs_engine_used)
		xs_engine_gone = true;
	xs_table_fork_child();
}

static void xs_setup(void)
{
	xs_resolve();
	xs_read_knobs();
	/*
	 * A refused rsocket connect falls back to a kernel connect at once:
	 * the engine's retry (for perftest's reconnect race) only delays it.
	 */
	setenv("XIW_CM_REFUSED_RETRY_MS", "0", 0);
	/* socket buffers like Linux TCP's, not rsockets' 128 KB */
	setenv("XIW_RS_WMEM", "2097152", 0);
	setenv("XIW_RS_RMEM", "2097152", 0);
	pthread_atfork(NULL, NULL, xs_fork_child);
	__atomic_store_n(&xs_ready, true, __ATOMIC_RELEASE);
}

void xs_init(void)
{
	pthread_once(&xs_once, xs_setup);
}

__attribute__((constructor)) static void xs_ctor(void)
{
	xs_init();
}
