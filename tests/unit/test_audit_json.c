/* audit_json_escape, audit_utf8_valid_len and audit_json_check_object: what a reader of the audit
 * log gets for every kind of input byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audit/json.h"

#define FFFD "\xef\xbf\xbd"

struct esc_case {
	const char *name; /* what the row shows */
	const char *in;   /* input bytes */
	size_t inlen;     /* input length (inputs may hold NUL) */
	const char *out;  /* the escaped text */
};

#define ROW(name, in, out)                                                                         \
	{                                                                                          \
		name, in, sizeof in - 1, out                                                       \
	}

static const struct esc_case esc_cases[] = {
        ROW("plain ASCII", "GET example.test/a?b=c", "GET example.test/a?b=c"),
        ROW("empty", "", ""),
        ROW("quote", "say \"hi\"", "say \\\"hi\\\""),
        ROW("backslash", "a\\b", "a\\\\b"),
        ROW("slash is left alone", "/x/", "/x/"),
        ROW("short escapes", "\n\r\t\b\f", "\\n\\r\\t\\b\\f"),
        ROW("NUL byte", "a\0b", "a\\u0000b"),
        ROW("other controls", "\x01\x0b\x1b\x1f", "\\u0001\\u000b\\u001b\\u001f"),
        ROW("DEL", "\x7f", "\\u007f"),
        ROW("space and tilde", " ~", " ~"),
        ROW("2-byte e-acute", "caf\xc3\xa9", "caf\xc3\xa9"),
        ROW("2-byte lowest U+0080", "\xc2\x80", "\xc2\x80"),
        ROW("2-byte highest U+07FF", "\xdf\xbf", "\xdf\xbf"),
        ROW("3-byte euro", "\xe2\x82\xac", "\xe2\x82\xac"),
        ROW("3-byte lowest U+0800", "\xe0\xa0\x80", "\xe0\xa0\x80"),
        ROW("3-byte U+D7FF before surrogates", "\xed\x9f\xbf", "\xed\x9f\xbf"),
        ROW("3-byte U+E000 after surrogates", "\xee\x80\x80", "\xee\x80\x80"),
        ROW("3-byte highest U+FFFF", "\xef\xbf\xbf", "\xef\xbf\xbf"),
        ROW("4-byte emoji", "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"),
        ROW("4-byte lowest U+10000", "\xf0\x90\x80\x80", "\xf0\x90\x80\x80"),
        ROW("4-byte highest U+10FFFF", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"),
        ROW("overlong NUL C0 80", "\xc0\x80", FFFD FFFD),
        ROW("overlong C1 BF", "\xc1\xbf", FFFD FFFD),
        ROW("overlong 3-byte slash", "\xe0\x80\xaf", FFFD FFFD FFFD),
        ROW("overlong 3-byte U+07FF", "\xe0\x9f\xbf", FFFD FFFD FFFD),
        ROW("overlong 4-byte", "\xf0\x80\x80\xaf", FFFD FFFD FFFD FFFD),
        ROW("overlong 4-byte U+FFFF", "\xf0\x8f\xbf\xbf", FFFD FFFD FFFD FFFD),
        ROW("high surrogate", "\xed\xa0\x80", FFFD FFFD FFFD),
        ROW("low surrogate", "\xed\xbf\xbf", FFFD FFFD FFFD),
        ROW("above U+10FFFF (F4 90)", "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD),
        ROW("F5 lead", "\xf5\x80\x80\x80", FFFD FFFD FFFD FFFD),
        ROW("FE and FF", "\xfe\xff", FFFD FFFD),
        ROW("stray continuation", "a\x80z", "a" FFFD "z"),
        ROW("two stray continuations", "\xbf\xbf", FFFD FFFD),
        ROW("cut 2-byte at end", "a\xc3", "a" FFFD),
        ROW("cut 3-byte at end", "\xe2\x82", FFFD FFFD),
        ROW("cut 4-byte at end", "\xf0\x9f\x98", FFFD FFFD FFFD),
        ROW("cut 3-byte before ASCII",
                "\xe2\x82"
                "A",
                FFFD FFFD "A"),
        ROW("lead before a valid sequence", "\xc3\xc3\xa9", FFFD "\xc3\xa9"),
        ROW("mix", "\"\xc3\xa9\n\xff", "\\\"\xc3\xa9\\n" FFFD),
};

static void test_escape_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof esc_cases / sizeof esc_cases[0]; i++) {
		const struct esc_case *c = &esc_cases[i];
		char out[256];
		memset(out, 'Z', sizeof out);
		size_t need = audit_json_escape(out, sizeof out, c->in, c->inlen);
		if (strcmp(out, c->out) != 0 || need != strlen(c->out)) {
			print_error("row \"%s\": got \"%s\" (%zu), want \"%s\"\n", c->name, out,
			        need, c->out);
			fail();
		}
	}
}

/* The escaped text of the table must itself be valid UTF-8 with no raw control byte. */
static void test_escape_output_is_clean(void **state)
{
	(void)state;
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	char out[2048];
	size_t need = audit_json_escape(out, sizeof out, (const char *)all, sizeof all);
	assert_int_equal(need, strlen(out));
	const unsigned char *p = (const unsigned char *)out;
	size_t len = strlen(out);
	for (size_t i = 0; i < len;) {
		assert_true(p[i] >= 0x20 && p[i] != 0x7f);
		size_t v = audit_utf8_valid_len(p + i, len - i);
		assert_true(v > 0);
		i += v;
	}
}

static void test_escape_cut_at_cap(void **state)
{
	(void)state;
	char out[16];

	/* Like snprintf: the return is the full length, the text is cut and NUL-terminated. */
	memset(out, 'Z', sizeof out);
	assert_int_equal(audit_json_escape(out, 4, "abcdef", 6), 6);
	assert_string_equal(out, "abc");

	/* Exact fit. */
	assert_int_equal(audit_json_escape(out, 4, "abc", 3), 3);
	assert_string_equal(out, "abc");

	/* An escape is never split: "a\"" needs 3 bytes, only 2 fit. */
	memset(out, 'Z', sizeof out);
	assert_int_equal(audit_json_escape(out, 3, "a\"", 2), 3);
	assert_string_equal(out, "a");

	/* Neither is a \u00XX escape. */
	assert_int_equal(audit_json_escape(out, 6, "a\x01", 2), 7);
	assert_string_equal(out, "a");

	/* Nor a multi-byte character. */
	assert_int_equal(audit_json_escape(out, 4, "a\xe2\x82\xac", 4), 4);
	assert_string_equal(out, "a");

	/* Nor a replacement character. */
	assert_int_equal(audit_json_escape(out, 3, "\xff", 1), 3);
	assert_string_equal(out, "");

	/* cap 1: only the NUL. */
	out[0] = 'Z';
	assert_int_equal(audit_json_escape(out, 1, "abc", 3), 3);
	assert_string_equal(out, "");

	/* cap 0: nothing written, the size still reported. */
	out[0] = 'Z';
	assert_int_equal(audit_json_escape(out, 0, "ab\"", 3), 4);
	assert_int_equal(out[0], 'Z');
	assert_int_equal(audit_json_escape(NULL, 0, "\n", 1), 2);
}

static void test_utf8_valid_len(void **state)
{
	(void)state;
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"", 0), 0);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"a", 1), 1);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"\x01", 1), 1);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"\xc3\xa9", 2), 2);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"\xc3\xa9", 1), 0);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"\xe2\x82\xac", 3), 3);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"\xf4\x8f\xbf\xbf", 4), 4);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"\xed\xa0\x80", 3), 0);
	assert_int_equal(audit_utf8_valid_len((const unsigned char *)"\xc0\x80", 2), 0);
}

static int check(const char *s, const char **prev, size_t *prevlen)
{
	const char *why = NULL;
	int rc = audit_json_check_object(s, strlen(s), prev, prevlen, &why);
	if (rc == -1)
		assert_non_null(why);
	return rc;
}

static void test_check_object(void **state)
{
	(void)state;
	const char *prev;
	size_t prevlen;
	static const char *const good[] = {
	        "{}",
	        " { } ",
	        "{\"a\":1}",
	        ("{\"a\":-0.5e+3,\"b\":\"x\\u00e9\\n\",\"c\":[1,[],{}],\"d\":true,\"e\":false,\"f\":"
	         "null}"),
	        "{\"k\":\"caf\xc3\xa9\"}",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		if (check(good[i], &prev, &prevlen) != 0) {
			print_error("rejected %s\n", good[i]);
			fail();
		}
		assert_null(prev);
	}
	static const char *const bad[] = {
	        "",
	        "[]",
	        "\"x\"",
	        "{",
	        "{\"a\"}",
	        "{\"a\":}",
	        "{\"a\":1,}",
	        "{\"a\":01}",
	        "{\"a\":1} x",
	        "{\"a\":\"\x01\"}",
	        "{\"a\":\"\\x\"}",
	        "{\"a\":\"\\u12\"}",
	        "{\"a\":\"\xff\"}",
	        "{\"a\":\"\xed\xa0\x80\"}",
	        "{\"a\":tru}",
	        "{a:1}",
	        "{\"prev\":1}",
	        "{\"prev\":\"a\",\"prev\":\"b\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (check(bad[i], &prev, &prevlen) != -1) {
			print_error("accepted %s\n", bad[i]);
			fail();
		}
	}
	/* 32 levels of nesting (the object and 31 arrays) are accepted, 33 refused. */
	char deep[128];
	for (int arrays = 31; arrays <= 32; arrays++) {
		size_t n = 0;
		memcpy(deep, "{\"a\":", 5);
		n = 5;
		for (int i = 0; i < arrays; i++)
			deep[n++] = '[';
		for (int i = 0; i < arrays; i++)
			deep[n++] = ']';
		deep[n++] = '}';
		deep[n] = '\0';
		assert_int_equal(check(deep, &prev, &prevlen), arrays == 31 ? 0 : -1);
	}

	/* The top-level prev is found, a nested one is not. */
	assert_int_equal(check("{\"x\":{\"prev\":\"no\"},\"prev\":\"abc\"}", &prev, &prevlen), 0);
	assert_non_null(prev);
	assert_int_equal(prevlen, 3);
	assert_memory_equal(prev, "abc", 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_escape_table),
	        cmocka_unit_test(test_escape_output_is_clean),
	        cmocka_unit_test(test_escape_cut_at_cap),
	        cmocka_unit_test(test_utf8_valid_len),
	        cmocka_unit_test(test_check_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
