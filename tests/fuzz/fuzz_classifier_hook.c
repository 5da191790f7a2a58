/* libFuzzer harness for the hook's JSON reader (classifier/json.c) and what the hook does with a
 * PreToolUse input.  Properties:
 *   1. no crash, leak or sanitizer report, whatever the bytes;
 *   2. a rejected input has a message; an accepted one round-trips: written back in canonical
 *      form (strings through cls_json_write_str) it parses again to the same tree, and writing
 *      that tree gives the same bytes;
 *   3. for a Bash call, the command is classified and the deny answer the hook would print
 *      (its reason through cls_json_write_str) is itself JSON the reader accepts, with the
 *      reason intact. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classifier/classifier.h"
#include "classifier/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_value(FILE *f, const struct cls_json *v)
{
	switch (v->type) {
	case CLS_JSON_NULL:
		fputs("null", f);
		break;
	case CLS_JSON_FALSE:
		fputs("false", f);
		break;
	case CLS_JSON_TRUE:
		fputs("true", f);
		break;
	case CLS_JSON_NUMBER:
		fwrite(v->s, 1, v->len, f);
		break;
	case CLS_JSON_STRING:
		cls_json_write_str(f, v->s, v->len);
		break;
	case CLS_JSON_ARRAY:
	case CLS_JSON_OBJECT:
		fputc(v->type == CLS_JSON_ARRAY ? '[' : '{', f);
		for (const struct cls_json *c = v->child; c != NULL; c = c->next) {
			if (c != v->child)
				fputc(',', f);
			if (v->type == CLS_JSON_OBJECT) {
				cls_json_write_str(f, c->key, c->klen);
				fputc(':', f);
			}
			write_value(f, c);
		}
		fputc(v->type == CLS_JSON_ARRAY ? ']' : '}', f);
		break;
	}
}

/* The canonical text of a tree (malloc'ed), its length in *len. */
static char *canonical(const struct cls_json *v, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (f == NULL)
		abort();
	write_value(f, v);
	fclose(f);
	return buf;
}

static int same(const struct cls_json *a, const struct cls_json *b)
{
	if (a->type != b->type || a->len != b->len || a->klen != b->klen)
		return 0;
	if (a->len && memcmp(a->s, b->s, a->len) != 0)
		return 0;
	if (a->klen && memcmp(a->key, b->key, a->klen) != 0)
		return 0;
	const struct cls_json *x = a->child, *y = b->child;
	for (; x != NULL && y != NULL; x = x->next, y = y->next)
		if (!same(x, y))
			return 0;
	return x == NULL && y == NULL;
}

/* Property 3: the deny answer for a Bash command parses, reason intact. */
static void check_answer(const struct cls_json *root)
{
	const struct cls_json *tool = cls_json_get(root, "tool_name");
	const struct cls_json *cmd = cls_json_get(cls_json_get(root, "tool_input"), "command");
	if (tool == NULL || tool->type != CLS_JSON_STRING || cmd == NULL ||
	        cmd->type != CLS_JSON_STRING)
		return;
	struct cls_result r;
	cls_classify(cmd->s, cmd->len, &r);
	char reason[512];
	snprintf(reason, sizeof reason, "egressd: %s (at byte %zu)",
	        r.refused ? r.reason : "classified", r.offset);
	cls_result_free(&r);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL)
		abort();
	fputs("{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
	      "\"permissionDecision\":\"deny\",\"permissionDecisionReason\":",
	        f);
	cls_json_write_str(f, reason, strlen(reason));
	fputs("}}", f);
	fclose(f);
	char err[256];
	struct cls_json_doc *d = cls_json_parse(buf, len, err, sizeof err);
	if (d == NULL) {
		fprintf(stderr, "the deny answer does not parse: %s\n%s\n", err, buf);
		abort();
	}
	const struct cls_json *why = cls_json_get(
	        cls_json_get(cls_json_root(d), "hookSpecificOutput"), "permissionDecisionReason");
	/* an ASCII reason comes back byte for byte (other bytes may be replaced by U+FFFD) */
	int ascii = 1;
	for (const char *p = reason; *p; p++)
		if ((unsigned char)*p >= 0x80)
			ascii = 0;
	if (why == NULL || why->type != CLS_JSON_STRING ||
	        (ascii && (why->len != strlen(reason) || memcmp(why->s, reason, why->len) != 0))) {
		fprintf(stderr, "the deny answer lost its reason\n%s\n", buf);
		abort();
	}
	cls_json_free(d);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct cls_json_doc *doc = cls_json_parse((const char *)data, size, err, sizeof err);
	if (doc == NULL) {
		if (err[0] == '\0') {
			fprintf(stderr, "a rejected input without a message\n");
			abort();
		}
		return 0;
	}
	const struct cls_json *root = cls_json_root(doc);
	size_t n1 = 0, n2 = 0;
	char *t1 = canonical(root, &n1);
	struct cls_json_doc *again = cls_json_parse(t1, n1, err, sizeof err);
	if (again == NULL) {
		fprintf(stderr, "the canonical form does not parse: %s\n%.*s\n", err, (int)n1, t1);
		abort();
	}
	char *t2 = canonical(cls_json_root(again), &n2);
	if (!same(root, cls_json_root(again)) || n1 != n2 || memcmp(t1, t2, n1) != 0) {
		fprintf(stderr, "the canonical form does not round-trip\n%.*s\n%.*s\n", (int)n1, t1,
		        (int)n2, t2);
		abort();
	}
	check_answer(root);
	free(t1);
	free(t2);
	cls_json_free(again);
	cls_json_free(doc);
	return 0;
}
