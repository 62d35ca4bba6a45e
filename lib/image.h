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
 */
#ifndef AB_IMAGE_H
#define AB_IMAGE_H

#include "deadline.h"
#include "engine.h"
#include "err.h"
#include "state.h"

#define AB_IMAGE_ENTRYPOINT "/usr/lib/agentbox/probe.sh"
#define AB_IMAGE_VERSIONS "/usr/lib/agentbox/versions.sh"

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

/* Refuses a base that is not an image ID or pinned by digest. */
int ab_image_check_base(const char *base, struct ab_err *err);
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
/* Re-inspects a registered image and repeats the label checks, and with
 * probe set the version probe too.  digest (>= 80 bytes) may be NULL. */
int ab_image_verify(struct ab_state *s, struct ab_engine *e,
    const struct ab_handle *h, int probe, char *digest, struct ab_err *err);
/* 1 when registered image ID carries COMPONENT (a version label its probe
 * confirmed: "ab-proxy", "claude-code"), 0 when not. */
int ab_image_has(struct ab_state *s, const char *id, const char *component,
    struct ab_err *err);
/* The same, with the version (cap bytes) in out. */
int ab_image_version(struct ab_state *s, const char *id,
    const char *component, char *out, size_t cap, struct ab_err *err);
/* The PATH a registered image pins, from its record. */
int ab_image_path(struct ab_state *s, const char *id, char *path, size_t cap,
    struct ab_err *err);
/* Removes what killed builds left: images of this state that no record
 * registers and version-probe containers, unless a live ab-image is
 * still making them (its in-flight marker).  MARK is the engine's mark, as
 * ab-clean read it ("" for none): a record of another engine keeps
 * nothing here.  *n counts what went. */
int ab_image_sweep(struct ab_state *s, struct ab_engine *e, const char *mark,
    int *n, struct ab_err *err);
/* Removes the engine image of a handle and its record; refuses an image
 * that does not carry this state's label. */
int ab_image_remove(struct ab_state *s, struct ab_engine *e,
    const struct ab_handle *h, struct ab_err *err);

#endif
