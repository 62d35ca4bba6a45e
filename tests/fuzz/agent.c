/* agent.c: libFuzzer harness for what ab-run reads of an agent CLI's
 * output (lib/agent/agent.c): Claude Code's stream-json lines or Codex's JSONL
 * events, every byte the agent's or its vendor's.  The first byte picks
 * the provider and whether an answer schema is set, the second the size
 * of the pieces the stream arrives in.  Beyond not crashing: the same
 * stream in pieces of any size gives the same agent section, and that
 * section is valid JSON within the bounds agent.h states.  Each step is
 * also told as a progress line (to /dev/null, on a clock that lets every
 * line through), so the reading of tool calls is fuzzed too. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>

#include "agent.h"
#include "common.h"
#include "json.h"

/* The agent's record: its fields are bounded (agent.h), far under. */
#define RECORD_MAX (16u << 20)

#define INPUT_MAX (256 * 1024)

static const char schema[] = "{\"type\":\"object\",\"properties\":{"
    "\"answer\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"}},"
    "\"required\":[\"answer\"],\"additionalProperties\":false}";

static long long fake_now;

static long long fake_clock(void)
{
	return fake_now += 1000;
}

static void section(const uint8_t *p, size_t n, size_t step, int codex,
    int with_schema, struct ab_buf *out)
{
	static int devnull = -2;
	struct ab_progress pr;
	struct ab_agent a;
	struct ab_jw w;
	size_t i, k;

	if (devnull == -2)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ab_progress_init(&pr, devnull, "agent: ");
	pr.clock = fake_clock;
	if (ab_progress_secret(&pr, "sk-fuzz-0123456789", 18) < 0)
		abort();
	ab_agent_init(&a, codex ? "codex" : "claude",
	    with_schema ? schema : NULL, with_schema ? strlen(schema) : 0);
	a.progress = &pr;
	for (i = 0; i < n; i += k) {
		k = n - i < step ? n - i : step;
		ab_agent_feed(&a, (const char *)p + i, k);
	}
	ab_agent_end(&a);
	ab_buf_init(out, RECORD_MAX);
	ab_jw_init(&w, out);
	ab_agent_json(&a, "1.0.0", &w);
	if (ab_jw_done(&w) != 0)
		abort();
	ab_agent_free(&a);
	ab_progress_free(&pr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ab_buf whole, pieces;
	struct ab_json j;
	struct ab_err err;
	size_t step;

	if (size < 2 || size > INPUT_MAX)
		return 0;
	step = 1 + data[1] % 64;
	section(data + 2, size - 2, size, data[0] & 1, data[0] & 2, &whole);
	section(data + 2, size - 2, step, data[0] & 1, data[0] & 2, &pieces);
	if (whole.len != pieces.len ||
	    memcmp(whole.data, pieces.data, whole.len) != 0)
		abort();
	/* The section and what it may hold: the final message, the answer
	 * and the error within their bounds, with room for escaping. */
	if (whole.len > 6 * (AB_AGENT_FINAL_MAX + AB_AGENT_ANSWER_MAX +
	    AB_AGENT_ERROR_MAX + AB_AGENT_REFUSED_MAX *
	    AB_AGENT_REFUSED_ITEM_MAX) + 65536)
		abort();
	memset(&err, 0, sizeof err);
	if (ab_json_parse(&j, whole.data, whole.len, &err) < 0)
		abort();
	ab_json_free(&j);
	ab_buf_free(&whole);
	ab_buf_free(&pieces);
	return 0;
}
