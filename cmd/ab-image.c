/* ab-image: build, verify and list the registered agent images. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deadline.h"
#include "engine.h"
#include "image.h"
#include "imagereg.h"
#include "imageroot.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-image build [--recipe default|agents] [--dir DIR]\n"
    "                [--base IMAGE | --packages LIST] [--wheels DIR]\n"
    "                [--rebuild] [--deadline FILE]\n"
    "       ab-image verify HANDLE [--deadline FILE]\n"
    "       ab-image remove HANDLE [--deadline FILE]\n"
    "       ab-image list\n"
    "       ab-image --version | --help\n";

struct opts {
	const char *verb, *handle, *deadline, *dir, *recipe, *base, *wheels;
	const char *packages;
	int rebuild;
};

/* bin/ab-image finds ../image in a source tree, and
 * ../share/agentbox/image when installed. */
static const char *image_dir(const char *given)
{
	static char dir[PATH_MAX + 64];
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (given != NULL)
		return given;
	if (getenv("AB_IMAGE_DIR") != NULL && *getenv("AB_IMAGE_DIR"))
		return getenv("AB_IMAGE_DIR");
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return "image";
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) != NULL)
		*slash = '\0';
	/* Too long a path is no image directory: the default's. */
	if (ab_fmt(dir, sizeof dir, "%s/../share/agentbox/image", exe) < 0)
		return "image";
	if (access(dir, F_OK) == 0)
		return dir;
	if (ab_fmt(dir, sizeof dir, "%s/../image", exe) < 0)
		return "image";
	return dir;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "deadline", required_argument, NULL, 'd' },
		{ "dir", required_argument, NULL, 'D' },
		{ "recipe", required_argument, NULL, 'r' },
		{ "base", required_argument, NULL, 'b' },
		{ "packages", required_argument, NULL, 'P' },
		{ "rebuild", no_argument, NULL, 'R' },
		{ "wheels", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof *o);
	o->recipe = "default";
	if (argc < 2)
		return ab_usage();
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return ab_option('h');
	if (strcmp(argv[1], "--version") == 0)
		return ab_version();
	o->verb = argv[1];
	while ((c = getopt_long(argc - 1, argv + 1, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->deadline = optarg; break;
		case 'D': o->dir = optarg; break;
		case 'r': o->recipe = optarg; break;
		case 'b': o->base = optarg; break;
		case 'P': o->packages = optarg; break;
		case 'R': o->rebuild = 1; break;
		case 'W': o->wheels = optarg; break;
		default: return ab_option(c);
		}
	}
	argc -= optind + 1;
	argv += optind + 1;
	if (strcmp(o->verb, "build") == 0 || strcmp(o->verb, "list") == 0) {
		if (argc != 0)
			return ab_usage_error("%s takes no operand", o->verb);
	} else if (strcmp(o->verb, "verify") == 0 ||
	    strcmp(o->verb, "remove") == 0) {
		if (argc != 1)
			return ab_usage_error("%s takes one handle", o->verb);
		o->handle = argv[0];
	} else {
		return ab_usage_error("unknown verb %s", o->verb);
	}
	/* Its pins contradicted the adapters': the user's own image with
	 * agentbox's layer on top replaces it. */
	if (strcmp(o->recipe, "production") == 0)
		return ab_usage_error("the production recipe is gone: give "
		    "--recipe agents --base IMAGE");
	if (strcmp(o->recipe, "default") != 0 &&
	    strcmp(o->recipe, "agents") != 0)
		return ab_usage_error("unknown recipe %s", o->recipe);
	if (o->wheels != NULL && strcmp(o->recipe, "agents") != 0)
		return ab_usage_error("--wheels goes with --recipe agents");
	if (o->packages != NULL && o->base != NULL)
		return ab_usage_error("--packages goes without --base");
	return 0;
}

/* Reads only: no state directory is made for it. */
static int list(struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	struct ab_state s;
	size_t i, n;
	int rc;

	if ((rc = ab_state_find(&s, err)) != 0)
		return rc > 0 ? 0 : -1;
	rc = ab_record_list(&s, "image", &ids, &n, err);
	ab_state_close(&s);
	if (rc < 0)
		return -1;
	for (i = 0; i < n; i++)
		printf("image:%s\n", ids[i]);
	free(ids);
	return fflush(stdout) == 0 ? 0 :
	    ab_fail_errno(err, AB_EENGINE, "cannot write the list");
}

/* A build prints the handle, then a last stderr line whose word says
 * whether anything changed (Ansible's changed_when reads it): "built" or
 * "reused". */
static int built(struct ab_state *s, struct ab_engine *e,
    struct ab_image_plan *plan, const struct ab_image_opts *io,
    char id[AB_ID_LEN + 1], struct ab_err *err)
{
	int reused = ab_image_build(s, e, plan, io, id, err);

	if (reused < 0 || ab_print_handle("image", id, err) < 0)
		return -1;
	ab_progress_line(reused ? "reused" : "built");
	return 0;
}

static int run(void *opts, struct ab_err *err)
{
	const struct opts *o = opts;
	struct ab_image_plan *plan = NULL;
	struct ab_image_opts io;
	struct ab_deadline dl;
	struct ab_engine e;
	struct ab_state s;
	struct ab_handle h;
	char id[AB_ID_LEN + 1];
	int rc;

	if (o->base != NULL && ab_image_check_base(o->base, err) < 0)
		return -1;
	if (o->handle != NULL && ab_handle_parse(&h, o->handle, "image",
	    err) < 0)
		return -1;
	if (strcmp(o->verb, "list") == 0)
		return list(err);
	if (ab_deadline_load(&dl, o->deadline, err) < 0 ||
	    ab_state_open(&s, err) < 0)
		return -1;
	memset(&io, 0, sizeof io);
	io.dir = image_dir(o->dir);
	io.recipe = o->recipe;
	io.base = o->base;
	io.packages = o->packages;
	io.rebuild = o->rebuild;
	io.wheels = o->wheels;
	io.dl = dl;
	io.progress = ab_progress_line;
	if ((strcmp(o->verb, "build") == 0 &&
	    ab_image_plan(&s, &io, &plan, err) < 0) ||
	    ab_deadline_check(&dl, "ab-image started", err) < 0 ||
	    ab_engine_open(&e, &dl, err) < 0) {
		ab_image_plan_free(plan);
		ab_state_close(&s);
		return -1;
	}
	if (strcmp(o->verb, "build") == 0)
		rc = built(&s, &e, plan, &io, id, err);
	else if (strcmp(o->verb, "verify") == 0)
		rc = ab_image_verify(&s, &e, &h, 1, NULL, err);
	else if ((rc = ab_image_remove(&s, &e, &h, err)) == 0)
		ab_say("removed image:%s", h.id);
	if (rc == 0 && strcmp(o->verb, "verify") == 0)
		rc = ab_print_handle("image", h.id, err);
	ab_image_plan_free(plan);
	ab_engine_close(&e);
	ab_state_close(&s);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;

	ab_prog = "ab-image";
	ab_usage_text = usage_text;
	return ab_tool_main(parse(argc, argv, &o), run, &o);
}
