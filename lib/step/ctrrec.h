/* ctrrec.h: a ctr record (ab-validate), the container made from a
 * profile, as the state directory keeps it; the container itself is
 * ctr.h's.  Apart from ctr.c because it holds a sign-in's identity
 * (signin.h), which the egress subsystem above the containers defines.
 */
#ifndef AB_CTRREC_H
#define AB_CTRREC_H

#include "err.h"
#include "signin.h"
#include "state.h"

/* A ctr record (ab-validate): the container made from a profile. */
struct ab_ctr {
	char id[AB_ID_LEN + 1];
	char profile[AB_ID_LEN + 1];
	char alloc[AB_ID_LEN + 1];
	char name[96];
	char container[80];
	/* A ChatGPT sign-in: what its file was when ab-validate copied it. */
	int sign_in;
	struct ab_signin sn;
};

int ab_ctr_save(struct ab_state *s, const struct ab_ctr *c,
    struct ab_err *err);
int ab_ctr_load(struct ab_state *s, const struct ab_handle *h,
    struct ab_ctr *c, struct ab_err *err);

#endif
