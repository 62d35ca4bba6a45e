/* state.h: the state directory, handles and records (agentbox(7),
 * "HANDLES", "STATE DIRECTORY").
 *
 * A handle is KIND:ID, ID 32 lowercase hex characters from getrandom(2).
 * It is a capability only because its record exists: $STATE/KIND/ID, a
 * JSON object whose "kind", "id" and "sid" fields repeat the handle and the
 * state directory's own ID, so a record copied under another name or from
 * another state directory is refused.
 */
#ifndef AB_STATE_H
#define AB_STATE_H

#include <stddef.h>

#include "err.h"
#include "json.h"

#define AB_ID_LEN 32
/* The largest record read back. */
#define AB_RECORD_MAX (16u << 20)	/* a result keeps up to 2 MiB of output */

struct ab_state {
	char path[4096];
	int dirfd;
	char sid[AB_ID_LEN + 1];
};

struct ab_handle {
	char kind[16];
	char id[AB_ID_LEN + 1];
};

/* Opens $AB_STATE_DIR, or ${XDG_STATE_HOME:-$HOME/.local/state}/agentbox,
 * creating it 0700; refuses one not owned by the euid, group or world
 * writable, or a symlink; creates its SID on first use. */
int ab_state_open(struct ab_state *s, struct ab_err *err);
/* The same for a tool that only reads: 1, with nothing created, when
 * there is no state directory yet. */
int ab_state_find(struct ab_state *s, struct ab_err *err);
void ab_state_close(struct ab_state *s);

/* 32 lowercase hex characters from getrandom(2). */
int ab_new_id(char id[AB_ID_LEN + 1], struct ab_err *err);
int ab_is_id(const char *s);

/* Parses KIND:ID.  With want non-NULL, KIND must be it. */
int ab_handle_parse(struct ab_handle *h, const char *text, const char *want,
    struct ab_err *err);

/* Writes a record atomically.  JSON is the whole object; the caller puts
 * kind/id/sid in it (ab_record_begin does). */
int ab_record_write(struct ab_state *s, const char *kind, const char *id,
    const char *json, size_t len, struct ab_err *err);
/* Starts a record object with kind, id and sid. */
void ab_record_begin(struct ab_jw *w, const struct ab_state *s,
    const char *kind, const char *id);
/* Reads and checks a record: refusal (1) for an unknown handle or one that
 * is not bound to this state directory. */
int ab_record_read(struct ab_state *s, const struct ab_handle *h,
    struct ab_json *j, struct ab_err *err);
/* 1 when a record file of that name exists (bound or not). */
int ab_record_exists(struct ab_state *s, const struct ab_handle *h);
/* 0 also when it was already gone. */
int ab_record_remove(struct ab_state *s, const struct ab_handle *h,
    struct ab_err *err);
/* Tombstones: $STATE/cleaned/KIND-ID, an empty file that ab-clean leaves
 * for every record it removed, so cleaning a handle again is "already
 * clean" (0), while a handle this directory never issued stays a refusal.
 * Written before the record goes: a crash between leaves both. */
int ab_tombstone_set(struct ab_state *s, const char *kind, const char *id,
    struct ab_err *err);
int ab_tombstone_has(struct ab_state *s, const char *kind, const char *id);
/* The IDs of every record of KIND, malloc'd array of AB_ID_LEN+1 strings. */
int ab_record_list(struct ab_state *s, const char *kind,
    char (**ids)[AB_ID_LEN + 1], size_t *n, struct ab_err *err);

/* A create request on behalf of KIND:ID (an allocation, or an image being
 * built) is in flight: a marker $STATE/KIND/.inflight-ID-PID exists from
 * before the request until its reply.  One left by a killed tool tells
 * ab-clean that a create may still land late, so only then does it wait
 * for the writer to end and then a settle window; one whose PID still
 * lives tells a sweep that the objects are still being made. */
int ab_inflight_begin(struct ab_state *s, const char *kind, const char *id,
    struct ab_err *err);
void ab_inflight_end(struct ab_state *s, const char *kind, const char *id);
/* 1 when a marker of ID exists; with clear 1, removes them all; with
 * AB_INFLIGHT_LIVE, 1 only when a marker's writer still runs: its PID
 * exists and is not a process started after the marker was written. */
#define AB_INFLIGHT_LIVE 2
int ab_inflight_any(struct ab_state *s, const char *kind, const char *id,
    int clear);

/* Removes the temporary records that writers killed before their rename
 * left behind: those whose writer's PID is gone.  *n counts them. */
int ab_state_sweep_tmp(struct ab_state *s, int *n, struct ab_err *err);
/* Removes the directories that run-tasks killed outright left
 * ("run-task.PID.XXXXXX") once their lease has run out: the deadline in
 * their file plus GRACE_MS.  *n counts them. */
int ab_state_sweep_runs(struct ab_state *s, long long grace_ms, int *n,
    struct ab_err *err);

#endif
