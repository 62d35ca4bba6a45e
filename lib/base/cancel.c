#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"

static volatile sig_atomic_t cancel_flag;
static int wake_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	cancel_flag = 1;
	if (wake_pipe[1] >= 0 && write(wake_pipe[1], "x", 1) < 0) {
		/* a full pipe: a wakeup is already pending */
	}
	errno = saved;
}

int ab_cancel_catch(struct ab_err *err)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;
	size_t i;

	if (wake_pipe[0] < 0 && pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot make a pipe");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* Installed over an inherited SIG_IGN too: a shell starts its
	 * background steps with SIGINT ignored. */
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int ab_cancel_fd(void)
{
	return wake_pipe[0];
}

int ab_cancel_requested(void)
{
	char b[64];

	while (wake_pipe[0] >= 0 && read(wake_pipe[0], b, sizeof b) > 0)
		;
	return cancel_flag;
}

int ab_cancel_check(const char *what, struct ab_err *err)
{
	if (ab_cancel_requested())
		return ab_fail(err, AB_ECANCELLED, "cancelled before %s", what);
	return 0;
}
