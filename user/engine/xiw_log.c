// SPDX-License-Identifier: MIT
/* Engine log: XIW_LOG=error|warn|info|debug selects the level (default warn). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "xiwarp/xiwarp.h"

static int log_level = -1;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_init(void)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	const char *v = getenv("XIW_LOG");

	log_level = XIW_LOG_WARN;
	for (int i = 0; v && i < 4; i++)
		if (!strcmp(v, names[i]))
			log_level = i;
}

void xiw_log(enum xiw_log_level lvl, const char *fmt, ...)
{
	static const char *const tags[] = { "error", "warning", "info", "debug" };
	char line[512];
	va_list ap;

	pthread_once(&log_once, log_init);
	if ((int)lvl > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* one write per line so lines from threads do not interleave */
	fprintf(stderr, "xiwarp %s: %s\n", tags[lvl], line);
}
