/* JSON string escaping and a small validator for audit lines.  Both are pure: no allocation, no
 * global state. */
#include "audit/json.h"

#include <stdint.h>
#include <string.h>

size_t audit_utf8_valid_len(const unsigned char *s, size_t len)
{
	if (len == 0)
		return 0;
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t n;
	uint32_t cp;
	uint32_t min;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, cp = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, cp = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, cp = c & 0x07, min = 0x10000;
	} else {
		/* 0x80-0xbf continuation without a lead, 0xc0/0xc1 always overlong, 0xf5+ beyond
		 * U+10FFFF. */
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static const char hexdig[] = "0123456789abcdef";

size_t audit_json_escape(char *dst, size_t cap, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t need = 0;    /* length of the whole escaped text */
	size_t out = 0;     /* bytes actually written to dst */
	int cut = cap == 0; /* once one unit did not fit, nothing more is written */
	char tmp[8];

	for (size_t i = 0; i < len;) {
		const char *unit;
		size_t ulen;
		unsigned c = p[i];
		size_t v = audit_utf8_valid_len(p + i, len - i);
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			tmp[0] = (char)c;
			unit = tmp, ulen = 1;
			i++;
		} else if (c == '"' || c == '\\') {
			tmp[0] = '\\', tmp[1] = (char)c;
			unit = tmp, ulen = 2;
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			static const char shortesc[] = "btn\0fr"; /* for 0x08-0x0d, \0 = none */
			tmp[0] = '\\';
			if (c >= 0x08 && c <= 0x0d && shortesc[c - 0x08] != '\0') {
				tmp[1] = shortesc[c - 0x08];
				ulen = 2;
			} else {
				memcpy(tmp + 1, "u00", 3);
				tmp[4] = hexdig[c >> 4];
				tmp[5] = hexdig[c & 0xf];
				ulen = 6;
			}
			unit = tmp;
			i++;
		} else if (v > 0) {
			unit = (const char *)p + i, ulen = v;
			i += v;
		} else {
			/* One replacement per bad byte: a reader can count what was lost, and a
			 * continuation byte after a bad lead is judged on its own. */
			unit = "\xef\xbf\xbd", ulen = 3;
			i++;
		}
		need += ulen;
		/* Whole units only, so a cut result is still valid JSON string text. */
		if (!cut && out + ulen < cap) {
			memcpy(dst + out, unit, ulen);
			out += ulen;
		} else {
			cut = 1;
		}
	}
	if (cap > 0)
		dst[out] = '\0';
	return need;
}

/* The validator: a recursive-descent reader of RFC 8259 JSON over [p, end). */
struct jrd {
	const unsigned char *p;   /* next byte */
	const unsigned char *end; /* one past the last byte */
	const char *why;          /* first error */
	int depth;                /* current nesting */
};

#define JSON_DEPTH_MAX 32

/* Keeps the first error and returns -1. */
static int jfail(struct jrd *r, const char *why)
{
	if (r->why == NULL)
		r->why = why;
	return -1;
}

/* Skips JSON white space. */
static void jws(struct jrd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* Reads the 4 hex digits of a \u escape. */
static int jhex4(struct jrd *r)
{
	if (r->end - r->p < 4)
		return jfail(r, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		unsigned char c = r->p[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return jfail(r, "bad \\u escape");
	}
	r->p += 4;
	return 0;
}

/* Reads a string; on success *s and *slen are its raw (still escaped) content. */
static int jstring(struct jrd *r, const unsigned char **s, size_t *slen)
{
	if (r->p >= r->end || *r->p != '"')
		return jfail(r, "expected a string");
	r->p++;
	const unsigned char *start = r->p;
	while (r->p < r->end) {
		unsigned char c = *r->p;
		if (c == '"') {
			if (s != NULL) {
				*s = start;
				*slen = (size_t)(r->p - start);
			}
			r->p++;
			return 0;
		}
		if (c < 0x20)
			return jfail(r, "control character in a string");
		if (c == '\\') {
			r->p++;
			if (r->p >= r->end)
				return jfail(r, "unterminated string");
			c = *r->p++;
			if (c == 'u') {
				if (jhex4(r) == -1)
					return -1;
			} else if (strchr("\"\\/bfnrt", c) == NULL || c == '\0') {
				return jfail(r, "bad escape in a string");
			}
			continue;
		}
		if (c < 0x80) {
			r->p++;
			continue;
		}
		size_t v = audit_utf8_valid_len(r->p, (size_t)(r->end - r->p));
		if (v == 0)
			return jfail(r, "invalid UTF-8 in a string");
		r->p += v;
	}
	return jfail(r, "unterminated string");
}

/* Reads one or more decimal digits. */
static int jdigits(struct jrd *r)
{
	const unsigned char *s = r->p;
	while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
		r->p++;
	return r->p == s ? jfail(r, "bad number") : 0;
}

/* Reads a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int jnumber(struct jrd *r)
{
	if (r->p < r->end && *r->p == '-')
		r->p++;
	if (r->p < r->end && *r->p == '0')
		r->p++;
	else if (jdigits(r) == -1)
		return -1;
	if (r->p < r->end && *r->p == '.') {
		r->p++;
		if (jdigits(r) == -1)
			return -1;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (jdigits(r) == -1)
			return -1;
	}
	return 0;
}

static int jvalue(struct jrd *r);

/* Reads the literal w (true, false, null). */
static int jword(struct jrd *r, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0)
		return jfail(r, "unexpected character");
	r->p += n;
	return 0;
}

/* Reads an object (obj) or array starting at its opening bracket. */
static int jcontainer(struct jrd *r, int obj)
{
	if (++r->depth > JSON_DEPTH_MAX)
		return jfail(r, "nested too deeply");
	r->p++;
	jws(r);
	if (r->p < r->end && *r->p == (obj ? '}' : ']')) {
		r->p++;
		r->depth--;
		return 0;
	}
	for (;;) {
		jws(r);
		if (obj) {
			if (jstring(r, NULL, NULL) == -1)
				return -1;
			jws(r);
			if (r->p >= r->end || *r->p != ':')
				return jfail(r, "expected ':'");
			r->p++;
		}
		if (jvalue(r) == -1)
			return -1;
		jws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == (obj ? '}' : ']')) {
			r->p++;
			r->depth--;
			return 0;
		}
		return jfail(r, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

/* Reads any value. */
static int jvalue(struct jrd *r)
{
	jws(r);
	if (r->p >= r->end)
		return jfail(r, "missing value");
	switch (*r->p) {
	case '{':
		return jcontainer(r, 1);
	case '[':
		return jcontainer(r, 0);
	case '"':
		return jstring(r, NULL, NULL);
	case 't':
		return jword(r, "true");
	case 'f':
		return jword(r, "false");
	case 'n':
		return jword(r, "null");
	default:
		return jnumber(r);
	}
}

/* The keys of docs/design.md 7, in their order; numeric ones must be non-negative integers. */
static const struct {
	const char *name;
	int numeric;
} std_keys[AUDIT_JSON_STD_KEYS] = {{"ts", 0}, {"seq", 1}, {"event", 0}, {"conn", 1}, {"front", 0},
        {"session", 0}, {"client", 0}, {"method", 0}, {"host", 0}, {"port", 1}, {"path", 0},
        {"action", 0}, {"decision", 0}, {"reason", 0}, {"rule", 0}, {"addr", 0}, {"orig_dst", 0},
        {"status", 1}, {"bytes_out", 1}, {"bytes_in", 1}, {"duration_ms", 1}, {"end", 0},
        {"prev", 0}};

int audit_json_std_key(const char *k, size_t n)
{
	for (int i = 0; i < AUDIT_JSON_STD_KEYS; i++)
		if (strlen(std_keys[i].name) == n && memcmp(std_keys[i].name, k, n) == 0)
			return i;
	return -1;
}

/* Reads a non-negative integer (no sign, fraction or exponent) that fits 64 bits. */
static int juint(struct jrd *r, uint64_t *v)
{
	const unsigned char *s = r->p;
	if (jnumber(r) == -1)
		return -1;
	uint64_t x = 0;
	for (const unsigned char *q = s; q < r->p; q++) {
		if (*q < '0' || *q > '9')
			return jfail(r, "a number that must be a non-negative integer is not");
		if (x > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
			return jfail(r, "a number out of range");
		x = x * 10 + (uint64_t)(*q - '0');
	}
	*v = x;
	return 0;
}

int audit_json_read_top(const char *line, size_t len, struct audit_json_top *top, const char **why)
{
	struct jrd r = {(const unsigned char *)line, (const unsigned char *)line + len, NULL, 1};
	uint32_t seen = 0;
	memset(top, 0, sizeof *top);
	jws(&r);
	if (r.p >= r.end || *r.p != '{') {
		*why = "not a JSON object";
		return -1;
	}
	r.p++;
	jws(&r);
	if (r.p < r.end && *r.p == '}') {
		r.p++;
	} else {
		for (;;) {
			const unsigned char *k, *v;
			size_t klen, vlen;
			jws(&r);
			if (jstring(&r, &k, &klen) == -1)
				goto bad;
			jws(&r);
			if (r.p >= r.end || *r.p != ':') {
				jfail(&r, "expected ':'");
				goto bad;
			}
			r.p++;
			jws(&r);
			int std = audit_json_std_key((const char *)k, klen);
			if (std != -1) {
				/* Two of one key would let a reader pick either. */
				if (seen & (1u << std)) {
					jfail(&r, "a key of docs/design.md 7 appears twice");
					goto bad;
				}
				seen |= 1u << std;
			}
			uint64_t num;
			if (std != -1 && std_keys[std].numeric) {
				if (r.p >= r.end || *r.p == '-' || *r.p < '0' || *r.p > '9') {
					jfail(&r, "a numeric field is not a number");
					goto bad;
				}
				if (juint(&r, &num) == -1)
					goto bad;
				if (std == 1) {
					top->has_seq = 1;
					top->seq = num;
				}
			} else if (std == 2 || std == AUDIT_JSON_STD_KEYS - 1) {
				/* event and prev are strings. */
				if (r.p >= r.end || *r.p != '"') {
					jfail(&r, std == 2 ? "\"event\" is not a string"
					                   : "\"prev\" is not a string");
					goto bad;
				}
				if (jstring(&r, &v, &vlen) == -1)
					goto bad;
				if (std == 2) {
					top->event = (const char *)v;
					top->eventlen = vlen;
				} else {
					top->prev = (const char *)v;
					top->prevlen = vlen;
				}
			} else if (jvalue(&r) == -1) {
				goto bad;
			}
			jws(&r);
			if (r.p < r.end && *r.p == ',') {
				r.p++;
				continue;
			}
			if (r.p < r.end && *r.p == '}') {
				r.p++;
				break;
			}
			jfail(&r, "expected ',' or '}'");
			goto bad;
		}
	}
	jws(&r);
	if (r.p != r.end) {
		*why = "text after the object";
		return -1;
	}
	return 0;
bad:
	*why = r.why;
	return -1;
}

int audit_json_check_object(
        const char *line, size_t len, const char **prev, size_t *prevlen, const char **why)
{
	struct audit_json_top top;
	int rc = audit_json_read_top(line, len, &top, why);
	*prev = rc == 0 ? top.prev : NULL;
	*prevlen = rc == 0 ? top.prevlen : 0;
	return rc;
}
