/* A small, strict, bounded JSON reader (RFC 8259) for the classifier's hook input
 * (`egressd classify --hook claude-code`), and the string writer of its answers.
 *
 * Strict: one value and only whitespace around it; no comments, trailing commas, single quotes,
 * leading zeros, bare control characters, invalid UTF-8, lone surrogates or duplicate keys.
 * Bounded: the text is at most CLS_JSON_MAX_TEXT bytes, nesting at most CLS_JSON_MAX_DEPTH,
 * and all memory is capped by the text's size. */
#ifndef EGRESSD_CLASSIFIER_JSON_H
#define EGRESSD_CLASSIFIER_JSON_H

#include <stddef.h>
#include <stdio.h>

#define CLS_JSON_MAX_TEXT (1u << 20) /* 1 MiB: a hook input holds one command of <= 64 KiB */
#define CLS_JSON_MAX_DEPTH 64

enum cls_json_type {
	CLS_JSON_NULL,   /* null */
	CLS_JSON_FALSE,  /* false */
	CLS_JSON_TRUE,   /* true */
	CLS_JSON_NUMBER, /* s/len: the number's text, as written (validated, not converted) */
	CLS_JSON_STRING, /* s/len: the decoded UTF-8 (may hold NUL bytes from \u0000) */
	CLS_JSON_ARRAY,  /* child: first element, then next */
	CLS_JSON_OBJECT, /* child: first member (key/klen set), then next */
};

struct cls_json {
	enum cls_json_type type;
	const char *s; /* STRING, NUMBER: text, NUL-terminated after len */
	size_t len;
	const char *key; /* a member of an object: its decoded key (NUL-terminated) */
	size_t klen;
	struct cls_json *child; /* ARRAY, OBJECT: the first element or member */
	struct cls_json *next;  /* the next element or member of the parent */
};

struct cls_json_doc; /* owns every node and string of one parse */

/* Parses text[0..len).  Returns the document (the root is cls_json_root), or NULL with a
 * message naming the byte offset in err (always NUL-terminated when cap > 0). */
struct cls_json_doc *cls_json_parse(const char *text, size_t len, char *err, size_t cap);

const struct cls_json *cls_json_root(const struct cls_json_doc *doc);

/* The member `key` of an object, or NULL (also when obj is not an object). */
const struct cls_json *cls_json_get(const struct cls_json *obj, const char *key);

void cls_json_free(struct cls_json_doc *doc);

/* Writes s[0..len) as a JSON string with its quotes: '"' and '\\' escaped, controls as \n \r
 * \t \b \f or \u00XX, DEL as \u007f, valid UTF-8 passed through, each byte of invalid UTF-8 as
 * U+FFFD (the rules of audit_json_escape). */
void cls_json_write_str(FILE *out, const char *s, size_t len);

#endif
