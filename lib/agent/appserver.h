/* appserver.h: ab-codex's side of Codex's app-server, the JSON-RPC 2.0
 * protocol (one JSON object a line) that Codex CLI speaks on its stdin
 * and stdout under `codex app-server`.
 *
 * agentbox is the only approver.  The thread is started with Codex's own
 * workspace-write sandbox (which cannot start in an agentbox container),
 * approval policy on-request and the user as reviewer, and its answer is
 * checked field by field.  What reaches agentbox then:
 *   - a file change Codex could not make inside its sandbox, accepted
 *     only when its item was announced first and every path it touches
 *     lies under the root, outside .git and .codex, with no symbolic link
 *     on the way (ab_path_write_ok);
 *   - a command or a write to a running command's stdin that asks for an
 *     escalation: declined, always (approved commands never ask: Codex's
 *     rules run them);
 *   - permission requests (an error: the protocol has no "decline"), MCP
 *     elicitations (cancel) and every request not known here (an error).
 * Any sign of another reviewer, a remote control, a policy other than
 * the one asked for, or a request for another thread aborts the run.
 *
 * Everything read is the agent's or its vendor's: lines are bounded
 * (AB_AS_LINE_MAX) and so is every field kept.  The module does no I/O
 * of its own: ab_as_feed takes bytes as they come; what must be sent to
 * the server collects in s->to_server, and the event lines ab-run reads
 * (Codex exec's JSONL shapes, lib/agent/agent.c) in s->events.  The filesystem
 * is asked through s->lstat, so a harness can stand in for it.
 */
#ifndef AB_APPSERVER_H
#define AB_APPSERVER_H

#include <stddef.h>
#include <sys/stat.h>

#include "buf.h"
#include "lines.h"

#define AB_AS_LINE_MAX (4u << 20)	/* one message from the server */
#define AB_AS_ID_MAX 128		/* thread, turn, item and request IDs */
#define AB_AS_ITEMS_MAX 256		/* file changes awaiting a decision */
#define AB_AS_CHANGES_MAX 64		/* paths of one file change */
#define AB_AS_PATH_MAX 4096
#define AB_AS_TEXT_MAX 1024		/* a command or reason, in an event */
#define AB_AS_OUTPUT_MAX (16u << 10)	/* what a command printed, likewise */
#define AB_AS_FINAL_MAX (256u << 10)	/* the agent's message, in an event */
#define AB_AS_WHY_MAX 256
/* One line we write: its fields are cut as above, at most 6 bytes each
 * byte as JSON; the largest, a change's paths or the prompt (256 KiB),
 * are under 2 MiB so. */
#define AB_AS_EVENT_MAX (8u << 20)
/* Lines waiting for Codex or for ab-run: ab-codex writes them out after
 * each read (64 KiB) of Codex's output, whose lines make a few events
 * each.  Past this the run is stopped, not an event dropped. */
#define AB_AS_QUEUE_MAX (256u << 20)

enum ab_as_state {
	AB_AS_STARTING,		/* initialize and thread/start sent */
	AB_AS_RUNNING,		/* the turn is under way */
	AB_AS_DONE,		/* turn/completed, status completed */
	AB_AS_FAILED,		/* the turn failed or was interrupted */
	AB_AS_ABORTED		/* agentbox stopped it: s->why */
};

struct ab_as_change {
	char *path;		/* absolute, as Codex reports it */
	char *move;		/* an update's move target, or NULL */
	char kind[8];		/* add, update, delete */
};

struct ab_as_item {
	char id[AB_AS_ID_MAX];
	int nchanges;
	int overflow;		/* more paths than AB_AS_CHANGES_MAX */
	int accepted;		/* agentbox said accept */
	struct ab_as_change c[AB_AS_CHANGES_MAX];
};

struct ab_as {
	const char *root;	/* "/work" */
	const char *model;	/* NULL: Codex's default */
	const char *prompt;	/* UTF-8 */
	const char *schema;	/* JSON text, or NULL */
	int (*lstat)(const char *path, struct stat *st);

	enum ab_as_state state;
	char why[AB_AS_WHY_MAX];	/* why it aborted or failed */
	char thread[AB_AS_ID_MAX];
	int turn_sent;
	struct ab_buf to_server;	/* lines to write to the server */
	struct ab_buf events;		/* lines for ab-run (stdout) */
	struct ab_lines lines;		/* the stream, split */
	int skipping;
	struct ab_buf usage;		/* the last total, as JSON */
	char grow_item[AB_AS_ID_MAX];	/* the agent message streaming now */
	size_t grow_bytes;		/* its deltas so far, as sent */
	struct ab_as_item *items[AB_AS_ITEMS_MAX];
	int accepted, declined;		/* decisions, for the summary */
};

/* Sets s up and queues initialize, initialized and thread/start. */
int ab_as_init(struct ab_as *s, const char *root, const char *model,
    const char *prompt, const char *schema,
    int (*lstat_fn)(const char *, struct stat *));
void ab_as_free(struct ab_as *s);
/* The server's stdout, in pieces as they come. */
void ab_as_feed(struct ab_as *s, const char *p, size_t n);
/* The server's stdout ended (it exited) before the turn completed. */
void ab_as_eof(struct ab_as *s);
/* Stops the run: an abort line in the events, state ABORTED. */
void ab_as_abort(struct ab_as *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
