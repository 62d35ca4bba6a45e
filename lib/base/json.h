/* json.h: reading JSON with jsmn, and a small writer.
 *
 * Reading: ab_json_parse tokenizes a whole document (exactly one value,
 * whitespace around it allowed) and refuses duplicate keys in an object,
 * so a record or an engine reply has one meaning.  Tokens are addressed by
 * index; index 0 is the root; -1 means "absent" everywhere.
 *
 * Writing: ab_jw appends to an ab_buf.  Strings are escaped as RFC 8259
 * requires and must be valid UTF-8 (invalid input makes the writer fail,
 * because the engine would silently replace such bytes).
 *
 * A NUL is a value like any other: a document may hold \u0000 in any
 * string (a command's output does), and the length-taking calls read and
 * write it.  What refuses it is every call that hands a value out as a C
 * string, where it would cut the value short: an ID, a path or a name
 * read with ab_json_str fails closed instead.
 */
#ifndef AB_JSON_H
#define AB_JSON_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

enum ab_json_type {
	AB_JSON_ABSENT = 0,
	AB_JSON_OBJECT,
	AB_JSON_ARRAY,
	AB_JSON_STRING,
	AB_JSON_NUMBER,
	AB_JSON_TRUE,
	AB_JSON_FALSE,
	AB_JSON_NULL
};

struct ab_json {
	char *text;		/* a private copy of the document */
	size_t len;
	void *tok;		/* jsmntok_t[ntok] */
	int ntok;
};

/* 0, or -1 with err (AB_EUSAGE by default: callers re-class it) naming
 * what is wrong: not JSON, trailing garbage, a duplicate key, too deep. */
int ab_json_parse(struct ab_json *j, const char *text, size_t len,
    struct ab_err *err);
void ab_json_free(struct ab_json *j);

enum ab_json_type ab_json_type(const struct ab_json *j, int t);
/* Children of an object (its keys) or an array; -1 if neither. */
int ab_json_count(const struct ab_json *j, int t);
/* The value of KEY (one level, KEY taken literally) in object OBJ. */
int ab_json_key(const struct ab_json *j, int obj, const char *key);
/* A dotted path from OBJ: "HostConfig.CapDrop".  Keys holding dots
 * (labels) need ab_json_key. */
int ab_json_get(const struct ab_json *j, int obj, const char *path);
/* Element I of array ARR. */
int ab_json_elem(const struct ab_json *j, int arr, int i);
/* For an object: the key token of member I (its value is that + 1). */
int ab_json_member(const struct ab_json *j, int obj, int i);
/* The token after T and everything inside it. */
int ab_json_skip(const struct ab_json *j, int t);

/* A malloc'd, unescaped copy of string token T, or NULL when T is not a
 * string or its value holds a NUL (a C string would end there). */
char *ab_json_str(const struct ab_json *j, int t);
/* The same, NULs and all: the value's length in *len (when not NULL),
 * and a NUL after it.  For text that is carried, never for a name. */
char *ab_json_strn(const struct ab_json *j, int t, size_t *len);
/* 1 when T is a string whose whole unescaped value equals S: one that
 * holds a NUL never equals a C string. */
int ab_json_str_eq(const struct ab_json *j, int t, const char *s);
/* The top-level object's string member KEY into DST (CAP bytes): 0, or
 * -1 when it is absent, not a string, holds a NUL, or does not fit. */
int ab_json_copy(const struct ab_json *j, const char *key, char *dst,
    size_t cap);
/* 0 with *out set when T is an integer in int64 range, no fraction or
 * exponent; -1 otherwise. */
int ab_json_int(const struct ab_json *j, int t, long long *out);
/* 0 when T is true or false. */
int ab_json_bool(const struct ab_json *j, int t, int *out);
/* The exact source text of T (strings with their quotes). */
void ab_json_span(const struct ab_json *j, int t, const char **p, size_t *n);

/* A value of a parsed document to replace: token T by the string S, or
 * when S is NULL by the integer NUM.  AT and LEN are ab_json_splice's. */
struct ab_json_edit {
	int t;
	const char *s;
	long long num;
	size_t at, len;
};

/* J's text with each of the N edits made, every other byte as it was,
 * appended to OUT (bounded by its max); -1 when an edit's token is
 * absent, two overlap, a string is not UTF-8, or OUT is full.  What it
 * held of the new text is wiped. */
int ab_json_splice(const struct ab_json *j, struct ab_json_edit *e, int n,
    struct ab_buf *out);

struct ab_jw {
	struct ab_buf *b;
	unsigned char comma[64];	/* per depth: a value was written */
	int depth;
	int after_key;
	int failed;
};

void ab_jw_init(struct ab_jw *w, struct ab_buf *b);
void ab_jw_obj(struct ab_jw *w);
void ab_jw_obj_end(struct ab_jw *w);
void ab_jw_arr(struct ab_jw *w);
void ab_jw_arr_end(struct ab_jw *w);
void ab_jw_key(struct ab_jw *w, const char *k);
void ab_jw_str(struct ab_jw *w, const char *s);
/* N bytes of UTF-8, a NUL among them written \u0000.  The engine's
 * requests are written from C strings: no NUL reaches it. */
void ab_jw_keyn(struct ab_jw *w, const char *k, size_t n);
void ab_jw_strn(struct ab_jw *w, const char *s, size_t n);
void ab_jw_int(struct ab_jw *w, long long v);
void ab_jw_bool(struct ab_jw *w, int v);
void ab_jw_null(struct ab_jw *w);
/* Inserts already-valid JSON text as one value. */
void ab_jw_raw(struct ab_jw *w, const char *json, size_t n);
/* Shorthands for a key and its value. */
void ab_jw_kstr(struct ab_jw *w, const char *k, const char *s);
void ab_jw_kstrn(struct ab_jw *w, const char *k, const char *s, size_t n);
void ab_jw_kint(struct ab_jw *w, const char *k, long long v);
void ab_jw_kbool(struct ab_jw *w, const char *k, int v);
/* 1 when ab_jw_strn would take the N bytes at P: valid UTF-8. */
int ab_json_utf8_ok(const char *p, size_t n);
/* 1 when they are valid UTF-8 and hold no NUL: text as a C string can
 * carry it. */
int ab_json_text_ok(const char *p, size_t n);
/* 0 when every call succeeded and all containers are closed. */
int ab_jw_done(const struct ab_jw *w);

#endif
