/* ab-alloc: capped tmpfs volumes and the keeper that holds them. */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "cancel.h"
#include "deadline.h"
#include "engine.h"
#include "image.h"
#include "imagereg.h"
#include "size.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-alloc --image IMAGE [--task-bytes N] [--task-inodes N]\n"
    "                [--git-bytes N] [--git-inodes N] [--inputs-bytes N]\n"
    "                [--inputs-inodes N] [--egress LIST [--egress-conns N]]\n"
    "                [--sign-in] [--deadline FILE]\n"
    "       ab-alloc --version | --help\n";

struct opts {
	const char *image, *deadline, *egress, *conns;
	const char *size[AB_NVOL][2];	/* bytes, inodes */
	int sign_in;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "image", required_argument, NULL, 'i' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "task-bytes", required_argument, NULL, 0 },
		{ "task-inodes", required_argument, NULL, 1 },
		{ "git-bytes", required_argument, NULL, 2 },
		{ "git-inodes", required_argument, NULL, 3 },
		{ "inputs-bytes", required_argument, NULL, 4 },
		{ "inputs-inodes", required_argument, NULL, 5 },
		{ "egress", required_argument, NULL, 'e' },
		{ "egress-conns", required_argument, NULL, 'c' },
		{ "sign-in", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof *o);
	while ((c = ab_getopt(argc, argv, "h", longopts)) != -1) {
		if (c >= 0 && c < 2 * AB_NVOL) {
			o->size[c / 2][c % 2] = optarg;
			continue;
		}
		switch (c) {
		case 'i': o->image = optarg; break;
		case 'd': o->deadline = optarg; break;
		case 'e': o->egress = optarg; break;
		case 'c': o->conns = optarg; break;
		case 's': o->sign_in = 1; break;
		default: return ab_option(c);
		}
	}
	if (optind != argc)
		return ab_usage_error("unexpected operand %s", argv[optind]);
	if (o->image == NULL)
		return ab_usage_error("--image is required");
	if (o->conns != NULL && o->egress == NULL)
		return ab_usage_error("--egress-conns goes with --egress");
	return 0;
}

/* The list, parsed and bounded before anything exists. */
static int egress(const struct opts *o, struct ab_alloc_egress *eg,
    struct ab_err *err)
{
	memset(eg, 0, sizeof *eg);
	if (o->egress == NULL)
		return 0;
	if (ab_egress_parse(&eg->list, o->egress, err) < 0)
		return -1;
	eg->max_conns = 64;
	if (o->conns != NULL && ab_parse_size(o->conns, AB_EGRESS_CONNS_MAX,
	    "--egress-conns", &eg->max_conns, err) < 0)
		return -1;
	eg->on = 1;
	return 0;
}

/* Egress needs the proxy and the relay in the image, as its probe saw. */
static int image_can_egress(struct ab_state *s, const char *img,
    struct ab_err *err)
{
	int p = ab_image_has(s, img, "ab-proxy", err), r;

	if (p < 0 || (r = ab_image_has(s, img, "ab-relay", err)) < 0)
		return -1;
	if (!p || !r)
		return ab_fail(err, AB_EREFUSED, "image:%s has no ab-proxy and "
		    "ab-relay: it cannot give egress", img);
	return 0;
}

/* Defaults: the task 1G and 200000 inodes, git 512M and 100000, the
 * inputs 1M and 64 (ab-alloc(1)). */
static int sizes(const struct opts *o, long long sz[AB_NVOL][2],
    struct ab_err *err)
{
	static const char *const def[AB_NVOL][2] = { { "1G", "200000" },
	    { "512M", "100000" }, { "1M", "64" } };
	static const char *const what[AB_NVOL][2] = {
	    { "--task-bytes", "--task-inodes" },
	    { "--git-bytes", "--git-inodes" },
	    { "--inputs-bytes", "--inputs-inodes" } };
	int i, k;

	for (i = 0; i < AB_NVOL; i++)
		for (k = 0; k < 2; k++)
			if (ab_parse_size(o->size[i][k] ? o->size[i][k] :
			    def[i][k], k ? AB_VOL_MAX_INODES : AB_VOL_MAX_BYTES, what[i][k],
			    &sz[i][k], err) < 0)
				return -1;
	return 0;
}

static int create(struct ab_state *s, struct ab_engine *e,
    const struct ab_handle *img, const struct ab_deadline *dl,
    long long sz[AB_NVOL][2], const struct ab_alloc_egress *eg,
    int sign_in, struct ab_err *err)
{
	char id[AB_ID_LEN + 1];
	struct ab_alloc a;
	int i;

	if (ab_new_id(id, err) < 0)
		return -1;
	ab_alloc_init(&a, id, s->sid);
	a.eg.on = eg->on;
	a.eg.list = eg->list;
	a.eg.max_conns = eg->max_conns;
	a.sign_in = sign_in;
	a.lease = *dl;
	memcpy(a.image, img->id, sizeof a.image);
	for (i = 0; i < AB_NVOL; i++) {
		a.vol[i].bytes = sz[i][0];
		a.vol[i].inodes = sz[i][1];
	}
	if (ab_image_verify(s, e, img, 0, a.digest, err) < 0 ||
	    ab_cancel_catch(err) < 0 ||
	    ab_alloc_create(s, e, &a, err) < 0)
		return -1;
	return ab_print_handle("alloc", id, err);
}

static int run(void *opts, struct ab_err *err)
{
	static struct ab_alloc_egress eg;
	const struct opts *o = opts;
	long long sz[AB_NVOL][2];
	struct ab_deadline dl;
	struct ab_handle img;
	struct ab_engine e;
	struct ab_state s;
	int rc = -1;

	if (sizes(o, sz, err) < 0 || egress(o, &eg, err) < 0 ||
	    ab_handle_parse(&img, o->image, "image", err) < 0 ||
	    ab_deadline_load(&dl, o->deadline, err) < 0 ||
	    ab_state_open(&s, err) < 0)
		return -1;
	if ((!eg.on || image_can_egress(&s, img.id, err) == 0) &&
	    ab_deadline_check(&dl, "ab-alloc started", err) == 0 &&
	    ab_engine_open(&e, &dl, err) == 0) {
		rc = create(&s, &e, &img, &dl, sz, &eg, o->sign_in, err);
		ab_engine_close(&e);
	}
	ab_state_close(&s);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;

	ab_prog = "ab-alloc";
	ab_usage_text = usage_text;
	return ab_tool_main(parse(argc, argv, &o), run, &o);
}
