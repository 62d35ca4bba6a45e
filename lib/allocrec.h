/* allocrec.h: what an allocation is, as its record holds it: the type
 * every step reads, apart from alloc.h's functions that make, load and
 * remove one, so a module that only reads an allocation (proxy.c) does
 * not need alloc.c, which needs it. */
#ifndef AB_ALLOCREC_H
#define AB_ALLOCREC_H

#include "deadline.h"
#include "egress.h"
#include "state.h"

enum { AB_VOL_TASK, AB_VOL_GIT, AB_VOL_INPUTS, AB_NVOL };

/* The ceilings a volume may have, on the command line and in a record. */
#define AB_VOL_MAX_BYTES (64LL << 30)
#define AB_VOL_MAX_INODES (1LL << 24)
/* No deadline or lease lies beyond the year 9999. */
#define AB_TIME_MAX_MS 253402300799999LL

struct ab_volume {
	char name[96];
	const char *role;	/* "task", "git", "inputs", "egress" */
	const char *target;	/* its mount point */
	long long bytes, inodes;
	int uid;		/* its owner: the agents', the proxy's or root's */
	int mode;		/* of its root; 0: 0755 */
};

/* Egress (ab-alloc --egress): a fourth volume holding the proxy's socket,
 * the proxy container, and the engine's egress network it is on
 * (proxy.h).  An allocation made before it names the state directory's
 * network instead, agentbox-SID-egress, and keeps it. */
#define AB_INPUTS_DIR "/run/agentbox/inputs"
#define AB_PROXY_UID 10002
#define AB_PROXY_USER "10002:10002"
#define AB_EGRESS_DIR "/run/agentbox/egress"
#define AB_EGRESS_SOCKET AB_EGRESS_DIR "/proxy.sock"
/* What the proxy counted, rewritten whole (tally.h). */
#define AB_EGRESS_TALLY AB_EGRESS_DIR "/tally.json"
#define AB_EGRESS_CONNS_MAX 1024

struct ab_alloc_egress {
	int on;
	struct ab_egress_list list;	/* fixed at ab-alloc, never widened */
	long long max_conns;
	char proxy[96];			/* the proxy container's name */
	char proxy_id[80];		/* "" until created */
	char network[96];		/* "" until known (proxy.h) */
	char network_id[80];		/* "" until known */
	struct ab_volume vol;
};

/* A sign-in (ab-alloc --sign-in): a fifth small volume, root's, with a
 * directory per invocation only that invocation's agent can open
 * (profile.h), that the keeper holds so a credential the agent refreshes
 * can be read back after it settled (ab-run).  Nothing else is ever kept
 * on it. */
#define AB_AUTH_DIR "/run/agentbox/auth"

struct ab_alloc {
	char id[AB_ID_LEN + 1];
	char engine[AB_ID_LEN + 1];	/* its engine's mark; "" in a record
					 * made before marks (engineid.h) */
	char image[AB_ID_LEN + 1];	/* the image handle's ID */
	char digest[80];
	struct ab_deadline lease;	/* the deadline it was made under */
	struct ab_volume vol[AB_NVOL];
	char keeper[96];		/* the keeper's name */
	char keeper_id[80];		/* "" until created */
	char status[16];		/* creating, ready, seeding, seeded */
	struct ab_alloc_egress eg;
	int sign_in;
	struct ab_volume auth;
	/* The staging clone's identity, once ab-seed made it. */
	char commit[41];
	long long stage_dev, stage_ino, objects_ino;
};

#endif
