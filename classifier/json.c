/* The strict, bounded JSON reader of json.h, and its string writer. */
#include "classifier/json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 100000   /* values in one document */
#define MAX_MEMBERS 1024   /* members of one object (duplicate keys are looked for) */
#define NODES_PER_CHUNK 64 /* nodes come in malloc'ed chunks */

struct chunk {
	struct chunk *next;
	struct cls_json nodes[NODES_PER_CHUNK];
};

struct cls_json_doc {
	struct cls_json *root;
	struct chunk *chunks; /* every node */
	size_t used;          /* nodes used in chunks (the head chunk) */
	size_t nnodes;        /* nodes in all chunks */
	char *text;           /* decoded strings and numbers, NUL after each; len + 1 bytes */
	size_t tlen;          /* bytes of text used */
};

struct reader {
	const unsigned char *p;   /* next byte */
	const unsigned char *end; /* one past the last */
	const unsigned char *start;
	struct cls_json_doc *doc;
	char *err;
	size_t cap;
	int failed;
};

__attribute__((format(printf, 2, 3))) static int fail(struct reader *r, const char *fmt, ...)
{
	if (r->failed)
		return -1;
	r->failed = 1;
	if (r->cap == 0)
		return -1;
	char msg[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(r->err, r->cap, "%s at byte %zu", msg, (size_t)(r->p - r->start));
	return -1;
}

static struct cls_json *new_node(struct reader *r, enum cls_json_type type)
{
	struct cls_json_doc *d = r->doc;
	if (d->nnodes >= MAX_NODES) {
		fail(r, "more than %d values", MAX_NODES);
		return NULL;
	}
	if (d->chunks == NULL || d->used == NODES_PER_CHUNK) {
		struct chunk *c = malloc(sizeof *c);
		if (c == NULL) {
			fail(r, "out of memory");
			return NULL;
		}
		c->next = d->chunks;
		d->chunks = c;
		d->used = 0;
	}
	struct cls_json *n = &d->chunks->nodes[d->used++];
	d->nnodes++;
	memset(n, 0, sizeof *n);
	n->type = type;
	return n;
}

static void skip_ws(struct reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int hexval(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Four hex digits after "\u" (r->p at the first).  -1 on error. */
static long read_hex4(struct reader *r)
{
	if (r->end - r->p < 4)
		return fail(r, "short \\u escape");
	long v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(r->p[i]);
		if (h < 0)
			return fail(r, "bad hex digit in a \\u escape");
		v = v * 16 + h;
	}
	r->p += 4;
	return v;
}

static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The length of the valid UTF-8 sequence at p (before end), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1fu;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0fu;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07u;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	        (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A string (r->p at the opening quote): decoded into the document's text.  0 or -1. */
static int read_string(struct reader *r, const char **out, size_t *outlen)
{
	struct cls_json_doc *d = r->doc;
	char *o = d->text + d->tlen;
	size_t k = 0;
	r->p++; /* the quote */
	for (;;) {
		if (r->p >= r->end)
			return fail(r, "unterminated string");
		unsigned char c = *r->p;
		if (c == '"') {
			r->p++;
			break;
		}
		if (c < 0x20)
			return fail(r, "control character in a string");
		if (c != '\\') {
			size_t n = utf8_len(r->p, r->end);
			if (n == 0)
				return fail(r, "invalid UTF-8 in a string");
			memcpy(o + k, r->p, n);
			k += n;
			r->p += n;
			continue;
		}
		if (r->end - r->p < 2)
			return fail(r, "unterminated escape");
		unsigned char e = r->p[1];
		r->p += 2;
		switch (e) {
		case '"':
		case '\\':
		case '/':
			o[k++] = (char)e;
			break;
		case 'b':
			o[k++] = '\b';
			break;
		case 'f':
			o[k++] = '\f';
			break;
		case 'n':
			o[k++] = '\n';
			break;
		case 'r':
			o[k++] = '\r';
			break;
		case 't':
			o[k++] = '\t';
			break;
		case 'u': {
			long hi = read_hex4(r);
			if (hi < 0)
				return -1;
			uint32_t cp = (uint32_t)hi;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(r, "lone low surrogate");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
					return fail(r, "high surrogate without a low one");
				r->p += 2;
				long lo = read_hex4(r);
				if (lo < 0)
					return -1;
				if (lo < 0xdc00 || lo > 0xdfff)
					return fail(r, "high surrogate without a low one");
				cp = 0x10000 + ((cp - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
			}
			/* \uXXXX is 6 bytes and decodes to at most 3; a pair is 12 -> 4 */
			k += put_utf8(o + k, cp);
			break;
		}
		default:
			return fail(r, "unknown escape \\%c", e >= 0x20 && e < 0x7f ? e : '?');
		}
	}
	o[k] = '\0';
	d->tlen += k + 1;
	*out = o;
	*outlen = k;
	return 0;
}

static int read_number(struct reader *r, struct cls_json *n)
{
	const unsigned char *s = r->p;
	if (r->p < r->end && *r->p == '-')
		r->p++;
	if (r->p >= r->end)
		return fail(r, "bad number");
	if (*r->p == '0') {
		r->p++;
	} else if (*r->p >= '1' && *r->p <= '9') {
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	} else {
		return fail(r, "bad number");
	}
	if (r->p < r->end && *r->p == '.') {
		r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return fail(r, "bad fraction");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return fail(r, "bad exponent");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	struct cls_json_doc *d = r->doc;
	size_t l = (size_t)(r->p - s);
	char *o = d->text + d->tlen;
	memcpy(o, s, l);
	o[l] = '\0';
	d->tlen += l + 1;
	n->s = o;
	n->len = l;
	return 0;
}

static int literal(struct reader *r, const char *word)
{
	size_t l = strlen(word);
	if ((size_t)(r->end - r->p) < l || memcmp(r->p, word, l) != 0)
		return fail(r, "unexpected character");
	r->p += l;
	return 0;
}

static struct cls_json *read_value(struct reader *r, int depth);

static struct cls_json *read_array(struct reader *r, int depth)
{
	struct cls_json *a = new_node(r, CLS_JSON_ARRAY);
	if (a == NULL)
		return NULL;
	struct cls_json **tail = &a->child;
	r->p++; /* [ */
	skip_ws(r);
	if (r->p < r->end && *r->p == ']') {
		r->p++;
		return a;
	}
	for (;;) {
		struct cls_json *v = read_value(r, depth + 1);
		if (v == NULL)
			return NULL;
		*tail = v;
		tail = &v->next;
		skip_ws(r);
		if (r->p >= r->end) {
			fail(r, "unterminated array");
			return NULL;
		}
		if (*r->p == ']') {
			r->p++;
			return a;
		}
		if (*r->p != ',') {
			fail(r, "expected , or ] in an array");
			return NULL;
		}
		r->p++;
	}
}

static struct cls_json *read_object(struct reader *r, int depth)
{
	struct cls_json *o = new_node(r, CLS_JSON_OBJECT);
	if (o == NULL)
		return NULL;
	struct cls_json **tail = &o->child;
	size_t members = 0;
	r->p++; /* { */
	skip_ws(r);
	if (r->p < r->end && *r->p == '}') {
		r->p++;
		return o;
	}
	for (;;) {
		if (r->p >= r->end || *r->p != '"') {
			fail(r, "expected a key");
			return NULL;
		}
		const char *key;
		size_t klen;
		if (read_string(r, &key, &klen) == -1)
			return NULL;
		for (const struct cls_json *m = o->child; m != NULL; m = m->next)
			if (m->klen == klen && memcmp(m->key, key, klen) == 0) {
				fail(r, "duplicate key");
				return NULL;
			}
		if (++members > MAX_MEMBERS) {
			fail(r, "more than %d members in an object", MAX_MEMBERS);
			return NULL;
		}
		skip_ws(r);
		if (r->p >= r->end || *r->p != ':') {
			fail(r, "expected : after a key");
			return NULL;
		}
		r->p++;
		struct cls_json *v = read_value(r, depth + 1);
		if (v == NULL)
			return NULL;
		v->key = key;
		v->klen = klen;
		*tail = v;
		tail = &v->next;
		skip_ws(r);
		if (r->p >= r->end) {
			fail(r, "unterminated object");
			return NULL;
		}
		if (*r->p == '}') {
			r->p++;
			return o;
		}
		if (*r->p != ',') {
			fail(r, "expected , or } in an object");
			return NULL;
		}
		r->p++;
		skip_ws(r);
	}
}

static struct cls_json *read_value(struct reader *r, int depth)
{
	if (depth > CLS_JSON_MAX_DEPTH) {
		fail(r, "nesting deeper than %d", CLS_JSON_MAX_DEPTH);
		return NULL;
	}
	skip_ws(r);
	if (r->p >= r->end) {
		fail(r, "expected a value");
		return NULL;
	}
	struct cls_json *n;
	switch (*r->p) {
	case '{':
		return read_object(r, depth);
	case '[':
		return read_array(r, depth);
	case '"':
		n = new_node(r, CLS_JSON_STRING);
		if (n == NULL || read_string(r, &n->s, &n->len) == -1)
			return NULL;
		return n;
	case 't':
		n = new_node(r, CLS_JSON_TRUE);
		return n == NULL || literal(r, "true") == -1 ? NULL : n;
	case 'f':
		n = new_node(r, CLS_JSON_FALSE);
		return n == NULL || literal(r, "false") == -1 ? NULL : n;
	case 'n':
		n = new_node(r, CLS_JSON_NULL);
		return n == NULL || literal(r, "null") == -1 ? NULL : n;
	default:
		if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) {
			n = new_node(r, CLS_JSON_NUMBER);
			return n == NULL || read_number(r, n) == -1 ? NULL : n;
		}
		fail(r, "unexpected character");
		return NULL;
	}
}

struct cls_json_doc *cls_json_parse(const char *text, size_t len, char *err, size_t cap)
{
	if (cap > 0)
		err[0] = '\0';
	if (len > CLS_JSON_MAX_TEXT) {
		if (cap > 0)
			snprintf(err, cap, "input over %u bytes", CLS_JSON_MAX_TEXT);
		return NULL;
	}
	struct cls_json_doc *d = calloc(1, sizeof *d);
	if (d != NULL)
		d->text = malloc(len + 1);
	if (d == NULL || d->text == NULL) {
		free(d);
		if (cap > 0)
			snprintf(err, cap, "out of memory");
		return NULL;
	}
	struct reader r = {(const unsigned char *)text, (const unsigned char *)text + len,
	        (const unsigned char *)text, d, err, cap, 0};
	d->root = read_value(&r, 1);
	if (d->root != NULL) {
		skip_ws(&r);
		if (r.p != r.end) {
			fail(&r, "text after the value");
			d->root = NULL;
		}
	}
	if (d->root == NULL) {
		if (!r.failed)
			fail(&r, "bad input");
		cls_json_free(d);
		return NULL;
	}
	return d;
}

const struct cls_json *cls_json_root(const struct cls_json_doc *doc)
{
	return doc->root;
}

const struct cls_json *cls_json_get(const struct cls_json *obj, const char *key)
{
	if (obj == NULL || obj->type != CLS_JSON_OBJECT)
		return NULL;
	size_t l = strlen(key);
	for (const struct cls_json *m = obj->child; m != NULL; m = m->next)
		if (m->klen == l && memcmp(m->key, key, l) == 0)
			return m;
	return NULL;
}

void cls_json_free(struct cls_json_doc *doc)
{
	if (doc == NULL)
		return;
	while (doc->chunks != NULL) {
		struct chunk *n = doc->chunks->next;
		free(doc->chunks);
		doc->chunks = n;
	}
	free(doc->text);
	free(doc);
}

void cls_json_write_str(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	fputc('"', out);
	while (i < len) {
		unsigned char ch = p[i];
		if (ch < 0x80) {
			switch (ch) {
			case '"':
				fputs("\\\"", out);
				break;
			case '\\':
				fputs("\\\\", out);
				break;
			case '\n':
				fputs("\\n", out);
				break;
			case '\r':
				fputs("\\r", out);
				break;
			case '\t':
				fputs("\\t", out);
				break;
			case '\b':
				fputs("\\b", out);
				break;
			case '\f':
				fputs("\\f", out);
				break;
			default:
				if (ch < 0x20 || ch == 0x7f)
					fprintf(out, "\\u%04x", ch);
				else
					fputc(ch, out);
			}
			i++;
			continue;
		}
		size_t n = utf8_len(p + i, p + len);
		if (n == 0) {
			fputs("\xef\xbf\xbd", out);
			i++;
			continue;
		}
		fwrite(p + i, 1, n, out);
		i += n;
	}
	fputc('"', out);
}
