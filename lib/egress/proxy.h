/* proxy.h: an allocation's egress on the engine (agentbox(7), "EGRESS").
 *
 * The proxy container runs ab-proxy as its own uid, locked down like the
 * keeper, with the allowlist and the lease in its command (so they are
 * validated with everything else and cannot be widened), on the engine's
 * egress network.  Agents join no network: they reach the proxy's socket
 * on the allocation's egress volume.
 *
 * One bridge network per engine, agentbox-egress-MARK-ID (MARK the
 * engine's, engineid.h; ID the allocation that made it), made by the
 * first egress allocation and kept like the mark: the engine takes
 * some 50 ms to make a bridge network and 150 ms to remove one (an
 * iptables run per rule, 18 of them on Engine 20.10), which a network per
 * allocation or per state directory put on every task's path, and its
 * default address pools hold about 31.  Only proxies join it: they have
 * no capability (no raw socket to spoof a neighbour with) and listen on
 * no port, and inter-container traffic on it is off (enable_icc=false),
 * so a proxy reaches no other.  It holds nothing of a task: an
 * allocation's objects are its containers and volumes, all removed and
 * proven gone by ab-clean.
 */
#ifndef AB_PROXY_H
#define AB_PROXY_H

#include "deadline.h"
#include "egress.h"
#include "lockdown.h"
#include "buf.h"
#include "engine.h"
#include "err.h"
#include "state.h"
#include "tally.h"

/* The proxy's limits: its memory, a base and what each connection of
 * its bound may cost (egress.h), and the pids and open files the bound
 * needs (a thread and two descriptors a connection).  64 connections,
 * the default, make 64 MiB. */
#define AB_PROXY_MEMORY_BASE (16LL << 20)
#define AB_PROXY_MEMORY(conns) (AB_PROXY_MEMORY_BASE + \
	(long long)(conns) * AB_EGRESS_CONN_MEMORY)
#define AB_PROXY_LOG_MAX "16m"
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

/* What the proxy is made from: its allocation's ID, engine mark, image
 * and lease, and the egress part of its record (alloc.h's ab_alloc_proxy
 * fills it in from struct ab_alloc).  The proxy knows nothing else of an
 * allocation. */
struct ab_proxy_of {
	const char *id, *engine, *digest;
	struct ab_deadline lease;
	const struct ab_alloc_egress *eg;
};

/* The anchors the proxy verifies a provider's host with: the image's
 * (ab-proxy takes agentbox's own bundle where its root has none, as the
 * probe does for agents). */
#define AB_PROXY_ANCHORS "/etc/ssl/certs/ca-certificates.crt"

/* 1 when NAME is an egress network's name of the engine marked MARK. */
int ab_egress_network_named(const char *name, const char *mark);

/* Finds or creates the engine's egress network (a network of its name
 * that is not exactly it is refused; an engine out of address pools is
 * AB_EENGINE saying so) and creates the proxy on it, both IDs in MADE
 * (the record's egress part, which A's eg points to); the
 * caller records them before ab_proxy_start. */
int ab_proxy_create(struct ab_state *s, struct ab_engine *e,
    const struct ab_proxy_of *a, struct ab_alloc_egress *made,
    int seccomp_keyword, struct ab_err *err);
/* Starts the proxy and checks it running against its lockdown. */
int ab_proxy_start(struct ab_state *s, struct ab_engine *e,
    const struct ab_proxy_of *a, int seccomp_keyword, struct ab_err *err);
/* The proxy is running and exactly its lockdown (deny by default). */
int ab_proxy_check(struct ab_state *s, struct ab_engine *e,
    const struct ab_proxy_of *a, int seccomp_keyword, struct ab_err *err);
/* Removes an older agentbox's egress network of this state directory
 * (agentbox-SID-egress) when no container is on it; quiet: a network
 * still in use stays, and a later clean or sweep takes it.  The number
 * of networks removed.  The engine's network is never removed here. */
int ab_egress_network_release(struct ab_state *s, struct ab_engine *e);

/* What the proxy counted so far: its tally, read through the engine. */
int ab_proxy_tally(struct ab_engine *e, const struct ab_proxy_of *a,
    struct ab_tally *t, struct ab_err *err);
/* The result's "egress" object for a run of container SELF that began
 * after BEGIN was read at FROM_MS: the allowlist, the proxy's state, and
 * what it counted since BEGIN (ab_tally_diff_json), from a tally written
 * after the run's end.  "scope" is "allocation-wide" when another agent
 * of the allocation ran meanwhile; "complete" is false when the proxy
 * died, was replaced, or wrote no newer tally.  -1 when no tally could
 * be read (the caller writes null).  *STATE: the proxy's, as "proxy"
 * says it ("running", "oom", "exited", "unknown").  WHO (NULL: none):
 * the invocation whose intercepted requests are listed as "requests"
 * (ab_tally_requests_json), whatever the scope. */
int ab_proxy_summary(struct ab_engine *e, const struct ab_proxy_of *a,
    const char *self, const struct ab_tally *begin, long long from_ms,
    const char *who, struct ab_buf *out, const char **state,
    struct ab_err *err);

#endif
