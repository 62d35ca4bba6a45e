/* schema.h: checking an agent's structured answer against a JSON Schema.
 *
 * An agent asked for an answer matching a user's schema may return
 * anything, and nothing on the client side checks it, so agentbox does.
 * The answer is hostile input; the schema is the user's.  Only a subset
 * of JSON Schema is supported, and a schema using anything else is refused
 * rather than half-enforced:
 *
 *   type        a name or a non-empty array of distinct names: object,
 *               array, string, number, integer, boolean, null.  "integer"
 *               is any number whose value is integral (1, 1.0, 1e3, 10e-1,
 *               -0), as JSON Schema has said since draft 6; "number"
 *               includes the integers.
 *   properties  an object of schemas
 *   required    an array of distinct strings
 *   additionalProperties   false, or true (the default: allowed); a
 *               schema there is refused
 *   items       one schema for every element; the array form is refused
 *   enum        a non-empty array of values; const: one value.  Compared
 *               as JSON: strings by their unescaped value, numbers by
 *               value (1 == 1.0 == 1e0, exactly, at any precision),
 *               arrays in order, objects whatever their key order
 *   title, description, $schema   annotations (strings), accepted and
 *               ignored: they change no verdict
 *
 * As in JSON Schema, a keyword about one type (properties, items) says
 * nothing about a value of another type; "type" is what requires it.
 * A schema is an object at every level (the boolean schemas true and false
 * are refused too), at most AB_SCHEMA_DEPTH levels deep, and a number in
 * its enum or const must have an exponent below 10^16.
 *
 * Messages are one line: a JSON Pointer (RFC 6901, "~0" and "~1"), or
 * "(root)" for the whole value, then what is wrong.  Bytes of a key
 * outside printable ASCII, and '\\', are written as \xNN, so a hostile key
 * can neither break the line nor drive a terminal; a pointer longer than
 * about 200 bytes is cut and ends in "...".
 *
 * Validation costs about n log n in the document's size (it stops at the
 * first violation); the caller bounds the document (json.c allows 64
 * levels of nesting).
 */
#ifndef AB_SCHEMA_H
#define AB_SCHEMA_H

#include <stddef.h>

#include "err.h"

#define AB_SCHEMA_DEPTH 64	/* levels of schemas in a schema */

/* Checks that SCHEMA (N bytes of JSON text) is well-formed and uses only
 * the subset.  0, or -1 with AB_EUSAGE and one line naming the keyword
 * and the JSON Pointer of the schema holding it, e.g. "schema: unsupported
 * keyword \"pattern\" at /properties/name" (AB_EENGINE when memory runs
 * out). */
int ab_schema_check(const char *schema, size_t n, struct ab_err *err);

/* Validates DOC (DN bytes of JSON text) against SCHEMA (SN bytes), which
 * is checked first.  1 valid; 0 invalid, with WHY (CAP bytes,
 * NUL-terminated, one line) naming the first violation and its JSON
 * Pointer in the document, e.g. "/items/2: not a string"; -1 when the
 * document is not JSON (AB_EREFUSED: a duplicate key, nesting deeper than
 * 64 and a NUL byte make it "not JSON" too), when the schema is not valid
 * (AB_EUSAGE), or when memory runs out (AB_EENGINE).  WHY is "" unless 0
 * is returned; it may be NULL when CAP is 0.
 *
 * The first violation: at each value, "type", then "const", then "enum",
 * then the "required" names in schema order, then the members in document
 * order (one not allowed by "additionalProperties", or one failing its
 * "properties" schema), or the elements in order. */
int ab_schema_validate(const char *schema, size_t sn, const char *doc,
    size_t dn, char *why, size_t cap, struct ab_err *err);

#endif
