/* debroot.h: a root filesystem made from Debian packages (ab-image build
 * --packages LIST), with mmdebstrap from the host's own apt sources and
 * keyrings, for the host's Debian release; no registry.
 *
 * Resolving runs mmdebstrap's simulation (a few seconds: it fetches the
 * package indexes, installs nothing), and gives every package the root
 * would hold with its version.  That set is what a build is reused by.
 * Building pins each package asked for to its resolved version, so the
 * root holds the set that was resolved, or the build fails.
 */
#ifndef AB_DEBROOT_H
#define AB_DEBROOT_H

#include <stddef.h>

#include "deadline.h"
#include "err.h"

struct ab_debroot {
	char suite[64];		/* the host's release: "bookworm" */
	char *include;		/* LIST and agentbox's own: "make,git,..." */
	char *set;		/* "NAME=VERSION NAME=VERSION ...", sorted */
	char *pinned;		/* the include list, each NAME=VERSION */
	size_t count;		/* packages in set */
	struct ab_deadline dl;
};

/* Checks LIST (comma-separated Debian package names) and resolves it
 * with NEEDS (agentbox's own) added.  A package that does not exist is
 * refused (AB_EUSAGE) naming it. */
int ab_debroot_resolve(struct ab_debroot *d, const char *list,
    const char *needs, const struct ab_deadline *dl, struct ab_err *err);
/* Makes the root as a tar file at OUT. */
int ab_debroot_build(struct ab_debroot *d, const char *out,
    struct ab_err *err);
void ab_debroot_free(struct ab_debroot *d);

#endif
