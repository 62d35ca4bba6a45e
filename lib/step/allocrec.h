/* allocrec.h: what an allocation is, as its record holds it: the type
 * every step reads, apart from alloc.h's functions that make, load and
 * remove one.  Its egress part is the proxy's (proxy.h), which knows no
 * more of an allocation. */
#ifndef AB_ALLOCREC_H
#define AB_ALLOCREC_H

#include "deadline.h"
#include "egress.h"
#include "lockdown.h"
#include "proxy.h"
#include "state.h"

enum { AB_VOL_TASK, AB_VOL_GIT, AB_VOL_INPUTS, AB_NVOL };

/* The ceilings a volume may have, on the command line and in a record. */
#define AB_VOL_MAX_BYTES (64LL << 30)
#define AB_VOL_MAX_INODES (1LL << 24)
/* No deadline or lease lies beyond the year 9999. */
#define AB_TIME_MAX_MS 253402300799999LL



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
