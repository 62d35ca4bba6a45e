/* agent.h: what ab-run reads of an agent CLI's own output into the
 * result's "agent" section (the provider adapters of ab-profile).
 *
 * The CLI's stream (Claude Code's stream-json lines, Codex's JSONL
 * events) is read as it arrives, before the output limit cuts what is
 * kept: a real session passes a megabyte.  Every line is bounded (AB_AGENT_LINE_MAX; the rest
 * up to its newline is skipped) and so is every field kept.  The answer
 * is validated against the profile's schema here, by agentbox: nothing on
 * the CLI's side checks it.  Everything read is the agent's or the
 * vendor's: untrusted.
 */
#ifndef AB_AGENT_H
#define AB_AGENT_H

#include <stddef.h>

#include "buf.h"
#include "json.h"
#include "lines.h"
#include "progress.h"

#define AB_AGENT_LINE_MAX (4u << 20)
#define AB_AGENT_FINAL_MAX (64u << 10)
#define AB_AGENT_ANSWER_MAX (1u << 20)
#define AB_AGENT_REFUSED_MAX 100
#define AB_AGENT_REFUSED_ITEM_MAX 4096
#define AB_AGENT_ERROR_MAX 2048
#define AB_AGENT_EDITS_MAX 500		/* file changes listed (Codex) */
#define AB_AGENT_CALLS 16		/* tool calls remembered, for refusals */

/* A tool call's progress text, by its ID: a refusal comes later, naming
 * the ID alone. */
struct ab_agent_call {
	char id[128];
	char text[AB_PROGRESS_TEXT_MAX];
};

struct ab_agent {
	char provider[16];		/* "claude", "codex" */
	const char *schema;		/* NULL: no answer is expected */
	size_t schema_len;
	struct ab_lines lines;		/* the stream, split */
	int lines_over;			/* lines that passed the bound */
	/* The last result line's fields. */
	int saw_result, is_error;
	long long num_turns, api_status;
	char subtype[48], terminal[48];
	struct ab_buf final, answer, usage, cost, refused, error, edits;
	int final_cut, refused_cut, error_cut, answer_over, answer_not_json;
	int nrefused, nedits, edits_cut;
	/* Each step as a progress line while it runs, or NULL: none. */
	struct ab_progress *progress;
	struct ab_agent_call calls[AB_AGENT_CALLS];
	int next_call;
};

void ab_agent_init(struct ab_agent *a, const char *provider,
    const char *schema, size_t schema_len);
void ab_agent_free(struct ab_agent *a);
/* The agent's standard output, in pieces as they come. */
void ab_agent_feed(struct ab_agent *a, const char *p, size_t n);
/* The output ended: a last line without its newline counts. */
void ab_agent_end(struct ab_agent *a);
/* The status ab_agent_json writes, for the last progress line. */
const char *ab_agent_status(const struct ab_agent *a);
/* Writes the "agent" object: provider, cli_version, status (ok,
 * no-answer, invalid-answer, error, output-too-large), final_message,
 * answer, usage, cost_usd, turns, edits (Codex's file changes that
 * landed; null for Claude Code, whose stream does not say), refused,
 * error, with truncation flags. */
void ab_agent_json(const struct ab_agent *a, const char *cli_version,
    struct ab_jw *w);

#endif
