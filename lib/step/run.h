/* run.h: running a validated agent container to its end (ab-run).
 *
 * The container is checked against its lockdown once more just before it
 * starts; a wait for its next exit and an attach to its output are
 * registered before the start, so no exit and no byte is missed.  The
 * probe's "agentbox-probe: ok NONCE" line must come first on stdout.  The
 * deadline and a cancellation (SIGINT, SIGTERM, SIGHUP) stop it the same
 * way: SIGTERM, the grace period, SIGKILL; the first reason recorded wins.
 * Nothing is reported before the container has settled.
 */
#ifndef AB_RUN_H
#define AB_RUN_H

#include "agent.h"
#include "buf.h"
#include "deadline.h"
#include "engine.h"
#include "err.h"
#include "lines.h"
#include "lockdown.h"
#include "outfile.h"
#include "progress.h"
#include "signin.h"
#include "state.h"

/* The most output a result record keeps in itself, per stream. */
#define AB_RUN_RECORD_OUTPUT (1LL << 20)
/* After the stop sequence, how long the engine gets to settle. */
#define AB_RUN_SETTLE_MS 15000

/* One output stream: into a file, or kept for the record; bytes past the
 * limit are counted and dropped. */
struct ab_capture {
	const char *path;	/* NULL: kept in keep */
	int fd;
	struct ab_outfile of;	/* by outfile.h's rule */
	long long limit, kept, dropped;
	struct ab_buf keep;
};

struct ab_run {
	/* Given. */
	const char *cid;		/* the container's full ID */
	const char *nonce;
	struct ab_deadline dl;		/* the deadline in force */
	long long grace_ms;
	struct ab_capture out, err;
	/* The credentials the agent held or could meet: masked in every
	 * string of the record as in the agent's lines; NULL: none. */
	const struct ab_progress *mask;
	/* Found. */
	char reason[16];	/* exited deadline cancelled oom killed
				   drift probe-refused engine-error */
	int started;
	long long status;	/* the engine's exit status; -1: none */
	int oom;
	int own_kills;		/* signals ab-run had the engine deliver */
	int outside_kill;	/* and one it did not send was delivered */
	int probe_ok;
	char probe_line[128];	/* what came instead of the ok line */
	int output_complete;	/* the attach stream ended cleanly */
	long long started_ms, ended_ms;
	char started_at[48], finished_at[48];
	struct ab_buf enforced;	/* JSON: the lockdown the check passed */
	int egress;		/* 0 none; 1 egress is the summary; -1 null */
	struct ab_buf egress_json;
	/* A provider's CLI: its output read as it comes (agent.h). */
	struct ab_agent *agent;
	char cli_version[64];
	/* How a provider's credential travelled: "injected" (the agent
	 * held a placeholder, inject.h) or "in-agent"; NULL: none given. */
	const char *credential;
	/* A ChatGPT sign-in: what became of the copy the agent left. */
	int sign_in;
	struct ab_signin_back sign_back;
	char sign_kept[4200];	/* where it was kept; "" when not */
	char error[768];	/* an engine failure, for the record */
};

void ab_run_init(struct ab_run *r);
void ab_run_free(struct ab_run *r);
/* Opens the capture files given (outfile.h); the close completes them
 * (a file replaced whole is renamed into place), and ab_run_free drops
 * what was not completed. */
int ab_run_open_outputs(struct ab_run *r, struct ab_err *err);
int ab_run_close_outputs(struct ab_run *r, struct ab_err *err);

/* The last check: the container was never started and still matches l.
 * A refusal (1) is drift. */
int ab_run_check(struct ab_engine *e, struct ab_run *r,
    const struct ab_lock *l, struct ab_err *err);
/* Starts the container and follows it until it settled; r->reason is
 * set.  -1 only for an engine failure (r->reason "engine-error"). */
int ab_run_follow(struct ab_engine *e, struct ab_run *r, struct ab_err *err);

/* The engine's events of the container, read as they come: every signal
 * sent to it through the engine is a "kill" event, whoever sent it, and
 * its "die" comes after them all.  The container's State cannot tell an
 * outside kill from the agent's own death by SIGKILL.  An event line over
 * AB_RUN_EVENT_LINE_MAX is none of these (skipped, its tail too). */
#define AB_RUN_EVENT_LINE_MAX (64 << 10)
struct ab_run_events {
	struct ab_lines lines;
	int kills, died, oom;
};
void ab_run_events_init(struct ab_run_events *ev);
void ab_run_events_feed(struct ab_run_events *ev, const char *p, size_t n);
void ab_run_events_free(struct ab_run_events *ev);

/* The identities a result names besides what the run found. */
struct ab_result_ids {
	const char *ctr, *profile, *alloc, *attempt, *phase;
	const char *image, *profile_sha;
};

int ab_result_save(struct ab_state *s, const char *id,
    const struct ab_result_ids *ids, const struct ab_run *r,
    struct ab_err *err);

#endif
