/* image.h: building, registering and verifying agent images.
 *
 * Two recipes live in the image directory: "default" (default.manifest:
 * a root filesystem assembled on the host and imported, no registry, no
 * network) and "agents" (agents.manifest: the same, with both agent CLIs
 * taken out of the hash-pinned wheels of agents.lock).  Either can be put
 * on another root instead: the user's own image on the engine (--base)
 * or a root made from Debian packages (--packages), with
 * agentbox's layer (default.layer, agents.layer) on top, in one import.
 * Each image is inspected, its labels checked one by one, and its
 * version probe run in a locked container before its ID is registered.
 * Only registered IDs ever reach a container.
 *
 * This header and image.c are the build; its parts are imagecheck.h
 * (what an image must be, checked on the engine), imagereg.h (the
 * records), imageimport.h (the import) and imageroot.h (another root).
 */
#ifndef AB_IMAGE_H
#define AB_IMAGE_H

#include "deadline.h"
#include "engine.h"
#include "err.h"
#include "state.h"

typedef void (*ab_progress)(const char *line);

struct ab_image_opts {
	const char *dir;	/* the image directory */
	const char *recipe;	/* "default" or "agents" */
	const char *base;	/* agentbox's layer on this image:
				 * NAME@sha256:HEX or sha256:HEX */
	const char *packages;	/* a root of these Debian packages */
	const char *wheels;	/* agents: a directory of the pinned wheels */
	struct ab_deadline dl;	/* for fetching wheels */
	int rebuild;
	ab_progress progress;
};

/* Reads and hashes the recipe and every input, asking no engine, so a
 * bad recipe is refused before anything exists. */
struct ab_image_plan;
int ab_image_plan(const struct ab_state *s, const struct ab_image_opts *o,
    struct ab_image_plan **p, struct ab_err *err);
void ab_image_plan_free(struct ab_image_plan *p);
/* Builds (or reuses) and registers the plan; writes the handle ID.  0
 * when it made a new image, 1 when it reused a registered one. */
int ab_image_build(struct ab_state *s, struct ab_engine *e,
    struct ab_image_plan *p, const struct ab_image_opts *o,
    char id[AB_ID_LEN + 1], struct ab_err *err);

#endif
