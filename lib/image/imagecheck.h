/* imagecheck.h: what a registered image must be, and the checks of an
 * image on the engine against it: its configuration and labels, and the
 * version probe run in a locked container (image.h). */
#ifndef AB_IMAGECHECK_H
#define AB_IMAGECHECK_H

#include "engine.h"
#include "err.h"
#include "state.h"

/* What every image runs: its entrypoint, and the version probe. */
#define AB_IMAGE_ENTRYPOINT "/usr/lib/agentbox/probe.sh"
#define AB_IMAGE_VERSIONS "/usr/lib/agentbox/versions.sh"

#define AB_IMAGE_SPEC_VERSIONS 16
#define AB_IMAGE_SPEC_PACKAGES (32 * 1024)

/* What a registered image must be: the record, and the labels it implies. */
struct ab_image_spec {
	char id[AB_ID_LEN + 1];
	char sid[AB_ID_LEN + 1];
	char kind[16];
	char recipe[65];
	char path_env[256];
	char digest[80];
	char engine[AB_ID_LEN + 1];	/* its engine's mark; "" in old records */
	int nv;
	char vname[AB_IMAGE_SPEC_VERSIONS][64];
	char vvalue[AB_IMAGE_SPEC_VERSIONS][128];
	/* On another root: the user's base image ID, or every Debian
	 * package of the root with its version ("NAME=V NAME=V"). */
	char base[80];
	char packages[AB_IMAGE_SPEC_PACKAGES];
};

/* Adds the version label N=V; refuses one past the last, too long, or
 * with a character a label value may not carry unquoted. */
int ab_image_spec_version(struct ab_image_spec *sp, const char *n,
    const char *v, struct ab_err *err);
/* The engine's image sp->digest is sp: its ID, user, entrypoint, PATH
 * and every org.agentbox.* label.  Keeps the reply for the container
 * checks of this process (ab_image_keep). */
int ab_image_inspect(struct ab_engine *e, const struct ab_image_spec *sp,
    struct ab_err *err);
/* Runs the image's version probe: it must report exactly the versions
 * its labels claim, in order. */
int ab_image_probe(struct ab_engine *e, const struct ab_image_spec *sp,
    struct ab_err *err);

#endif
