#include <stdarg.h>
#include <stdio.h>

#include "tool.h"
#include "version.h"

const char *ab_prog = "agentbox";

int ab_report(const struct ab_err *err)
{
	fprintf(stderr, "%s: %s\n", ab_prog, err->msg);
	return err->code ? err->code : AB_EENGINE;
}

int ab_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", ab_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return AB_EUSAGE;
}

int ab_version(void)
{
	printf("%s\n", AB_VERSION);
	return -1;
}

void ab_progress_line(const char *line)
{
	fprintf(stderr, "%s: %s\n", ab_prog, line);
}

int ab_print_handle(const char *kind, const char *id, struct ab_err *err)
{
	if (printf("%s:%s\n", kind, id) < 0 || fflush(stdout) != 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot write the handle");
	return 0;
}
