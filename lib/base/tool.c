#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "version.h"

const char *ab_prog = "agentbox";
const char *ab_usage_text = "";

/* "prog: TEXT" as one printable line into OUT (CAP bytes). */
static void line_of(char *out, size_t cap, const char *text)
{
	size_t k = 0;

	/* A name too long for the line is left out, never the text. */
	if (ab_fmt(out, cap, "%s: ", ab_prog) == 0 && strlen(out) + 2 < cap)
		k = strlen(out);
	k += ab_printable(out + k, cap - k - 1, text, strlen(text));
	out[k++] = '\n';
	out[k] = '\0';
}

/* Whole when memory allows (a path ab-export names may be long), cut
 * to the buffers otherwise; written at once, so that lines of two
 * writers never mix. */
void ab_vsay(const char *fmt, va_list ap)
{
	char small[1024], line[4 * sizeof small + 64];
	char *text = small, *out = line;
	size_t cap = sizeof line;
	va_list again;
	int n;

	va_copy(again, ap);
	/* Cut to SMALL only when memory runs out. */
	if (ab_vfmt(small, sizeof small, fmt, ap) < 0 &&
	    vasprintf(&text, fmt, again) < 0)
		text = small;
	va_end(again);
	n = (int)strlen(text);
	if (n > 0 && 4 * (size_t)n + 64 > cap &&
	    (out = malloc(4 * (size_t)n + 64)) != NULL)
		cap = 4 * (size_t)n + 64;
	else
		out = line;
	line_of(out, cap, text);
	fputs(out, stderr);
	if (out != line)
		free(out);
	if (text != small)
		free(text);
}

void ab_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ab_vsay(fmt, ap);
	va_end(ap);
}

int ab_report(const struct ab_err *err)
{
	ab_say("%s", err->msg);
	return err->code ? err->code : AB_EENGINE;
}

int ab_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ab_vsay(fmt, ap);
	va_end(ap);
	return AB_EUSAGE;
}

int ab_version(void)
{
	printf("%s\n", AB_VERSION);
	return -1;
}

int ab_getopt(int argc, char **argv, const char *shorts,
    const struct option *own)
{
	static struct option all[32];
	size_t n = 0;

	for (; own[n].name != NULL && n + 3 < sizeof all / sizeof *all; n++)
		all[n] = own[n];
	all[n++] = (struct option){ "version", no_argument, NULL, 'V' };
	all[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	all[n] = (struct option){ NULL, 0, NULL, 0 };
	return getopt_long(argc, argv, shorts, all, NULL);
}

int ab_usage(void)
{
	fputs(ab_usage_text, stderr);
	return AB_EUSAGE;
}

int ab_option(int c)
{
	if (c == 'V')
		return ab_version();
	if (c != 'h')
		return ab_usage();
	fputs(ab_usage_text, stdout);
	return -1;
}

void ab_progress_line(const char *line)
{
	ab_say("%s", line);
}

int ab_print_handle(const char *kind, const char *id, struct ab_err *err)
{
	if (printf("%s:%s\n", kind, id) < 0 || fflush(stdout) != 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot write the handle");
	return 0;
}

int ab_tool_main(int parsed, int (*run)(void *opts, struct ab_err *err),
    void *opts)
{
	struct ab_err err;

	if (parsed != 0)
		return parsed < 0 ? 0 : parsed;
	memset(&err, 0, sizeof err);
	return run(opts, &err) < 0 ? ab_report(&err) : 0;
}
