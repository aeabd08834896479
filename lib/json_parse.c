/* A JSON reader that accepts what json_loadb(..., 0, ...) accepts (see json_parse.h). */
#include "json_parse.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_atoms.h"
#include "utf8.h"
#include "xalloc.h"

#define MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH: values nested, scalars counted */

struct parser {
	const char *p, *start, *end;
	int depth;
	int filtered; /* objects keep only the keys of their table (mtc_json_parse_kept) */
	const struct mtc_json_atoms *atoms;
	char *err;
	size_t errlen;
	char *text; /* a decoded string with escapes or UTF-8, as long as the longest one */
	size_t text_cap;
};

/* What an object keeps and how long a list or string may be, where filtered. */
struct within {
	const struct mtc_json_keep *keep;
	size_t max_items, max_bytes;
};

static json_t *value(struct parser *ps, int in_array, struct within in);

__attribute__((format(printf, 2, 3))) static json_t *fail(struct parser *ps, const char *fmt, ...)
{
	char what[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (ps->errlen && !*ps->err)
		snprintf(ps->err, ps->errlen, "invalid JSON at byte %zu: %s",
			 (size_t)(ps->p - ps->start), what);
	return NULL;
}

static void skip_space(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
		ps->p++;
}

static int hex4(const char *s, const char *end)
{
	int v = 0;
	if (end - s < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v += c - '0';
		else if (c >= 'a' && c <= 'f')
			v += c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v += c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* One \uXXXX escape, or a surrogate pair of them, at ps->p (after the backslash's 'u'). */
static int unicode_escape(struct parser *ps, uint32_t *cp)
{
	int hi = hex4(ps->p, ps->end), lo;
	if (hi < 0)
		return fail(ps, "invalid \\u escape"), -1;
	ps->p += 4;
	if (hi >= 0xDC00 && hi <= 0xDFFF)
		return fail(ps, "lone low surrogate \\u%04X", hi), -1;
	if (hi < 0xD800 || hi > 0xDBFF) {
		*cp = (uint32_t)hi;
	} else {
		if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
			return fail(ps, "high surrogate \\u%04X without its pair", hi), -1;
		if ((lo = hex4(ps->p + 2, ps->end)) < 0)
			return fail(ps, "invalid \\u escape"), -1;
		if (lo < 0xDC00 || lo > 0xDFFF)
			return fail(ps, "invalid surrogate pair \\u%04X\\u%04X", hi, lo), -1;
		ps->p += 6;
		*cp = 0x10000 + ((uint32_t)(hi - 0xD800) << 10) + (uint32_t)(lo - 0xDC00);
	}
	if (*cp == 0)
		return fail(ps, "\\u0000 in a string"), -1;
	return 0;
}

/* The bytes a string holds as they are: printable ASCII but the quote and the backslash. */
static const unsigned char plain[256] = {
	[0x20 ... 0x21] = 1, [0x23 ... 0x5B] = 1, [0x5D ... 0x7F] = 1, /* not '"' (0x22), '\\' (0x5C) */
};

/*
 * The string at ps->p (just after its opening quote) into *s and *n: in place
 * when it is plain ASCII without escapes, else decoded into ps->text.
 */
static int string(struct parser *ps, const char **s, size_t *n)
{
	const unsigned char *q = (const unsigned char *)ps->p, *end = (const unsigned char *)ps->end;
	char *t;

	while (q < end && plain[*q])
		q++;
	if (q < end && *q == '"') {
		*s = ps->p;
		*n = (size_t)((const char *)q - ps->p);
		ps->p = (const char *)q + 1;
		return 0;
	}
	if (ps->text_cap <= (size_t)(ps->end - ps->p)) { /* decoding never lengthens */
		free(ps->text);
		ps->text_cap = (size_t)(ps->end - ps->p) + 1;
		ps->text = xmalloc(ps->text_cap);
	}
	t = ps->text;
	memcpy(t, ps->p, (size_t)((const char *)q - ps->p));
	t += (const char *)q - ps->p;
	ps->p = (const char *)q;
	for (;;) {
		unsigned char c;
		size_t u;
		uint32_t cp;
		if (ps->p >= ps->end)
			return fail(ps, "a string without its closing quote"), -1;
		c = (unsigned char)*ps->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(ps, "control character 0x%x in a string", c), -1;
		if (c >= 0x80) {
			if (!(u = mtc_utf8_len((const unsigned char *)ps->p, end)))
				return fail(ps, "invalid UTF-8 byte 0x%x", c), -1;
			memcpy(t, ps->p, u);
			t += u;
			ps->p += u;
			continue;
		}
		if (c != '\\') {
			*t++ = (char)c;
			ps->p++;
			continue;
		}
		if (++ps->p >= ps->end)
			return fail(ps, "a string without its closing quote"), -1;
		switch (*ps->p++) {
		case '"': *t++ = '"'; break;
		case '\\': *t++ = '\\'; break;
		case '/': *t++ = '/'; break;
		case 'b': *t++ = '\b'; break;
		case 'f': *t++ = '\f'; break;
		case 'n': *t++ = '\n'; break;
		case 'r': *t++ = '\r'; break;
		case 't': *t++ = '\t'; break;
		case 'u':
			if (unicode_escape(ps, &cp) < 0)
				return -1;
			t += mtc_utf8_put(t, cp);
			break;
		default: ps->p--; return fail(ps, "invalid escape"), -1;
		}
	}
	ps->p++;
	*s = ps->text;
	*n = (size_t)(t - ps->text);
	return 0;
}

static int is_digit(const char *p, const char *end) { return p < end && *p >= '0' && *p <= '9'; }

/* The integer of the digits from s to ps->p, with its sign: what strtoll reads, ERANGE refused. */
static json_t *integer(struct parser *ps, const char *s, const struct mtc_json_atoms *shared)
{
	int neg = *s == '-';
	uint64_t v = 0, max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	json_int_t i;
	json_t *atom;

	for (const char *q = s + neg; q < ps->p; q++) {
		unsigned digit = (unsigned)(*q - '0');
		if (v > (max - digit) / 10) {
			ps->p = s;
			return fail(ps, "number out of range");
		}
		v = v * 10 + digit;
	}
	i = neg ? (json_int_t)(0 - v) : (json_int_t)v;
	if ((atom = mtc_json_atom_integer(shared, i)))
		return json_incref(atom);
	return json_integer(i);
}

/*
 * A number as JSON writes one: an integer within json_int_t (the shared one
 * when shared is set and holds it), or a finite real.
 */
static json_t *number(struct parser *ps, const struct mtc_json_atoms *shared)
{
	const char *s = ps->p;
	char buf[64], *copy;
	size_t n;
	int real = 0;
	double d;

	if (*ps->p == '-')
		ps->p++;
	if (!is_digit(ps->p, ps->end))
		return fail(ps, "invalid number");
	if (*ps->p == '0') {
		if (is_digit(++ps->p, ps->end))
			return fail(ps, "a number with a leading zero");
	} else {
		while (is_digit(ps->p, ps->end))
			ps->p++;
	}
	if (ps->p < ps->end && *ps->p == '.') {
		real = 1;
		if (!is_digit(++ps->p, ps->end))
			return fail(ps, "invalid number");
		while (is_digit(ps->p, ps->end))
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		real = 1;
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (!is_digit(ps->p, ps->end))
			return fail(ps, "invalid number");
		while (is_digit(ps->p, ps->end))
			ps->p++;
	}
	if (!real)
		return integer(ps, s, shared);
	n = (size_t)(ps->p - s);
	copy = n < sizeof buf ? buf : xmalloc(n + 1); /* strtod needs a terminated string */
	memcpy(copy, s, n);
	copy[n] = '\0';
	errno = 0;
	d = strtod(copy, NULL);
	if (copy != buf)
		free(copy);
	if (errno == ERANGE && isinf(d)) {
		ps->p = s;
		return fail(ps, "number out of range");
	}
	return json_real(d);
}

static json_t *literal(struct parser *ps)
{
	static const struct {
		const char *word;
		size_t len;
	} words[] = { { "true", 4 }, { "false", 5 }, { "null", 4 } };
	for (size_t i = 0; i < 3; i++)
		if ((size_t)(ps->end - ps->p) >= words[i].len &&
		    !memcmp(ps->p, words[i].word, words[i].len)) {
			ps->p += words[i].len;
			return i == 0 ? json_true() : i == 1 ? json_false() : json_null();
		}
	return fail(ps, "invalid token");
}

/* Past an opening '[' or '{': 1 when the container is empty, its close consumed too. */
static int open_empty(struct parser *ps, char close)
{
	ps->p++;
	skip_space(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 1;
	}
	return 0;
}

/* After an entry: 1 past a ',' (another follows), 0 past close, -1 (failed) at anything else. */
static int next_entry(struct parser *ps, char close)
{
	skip_space(ps);
	if (ps->p < ps->end && *ps->p == ',') {
		ps->p++;
		skip_space(ps);
		return 1;
	}
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	fail(ps, "',' or '%c' expected", close);
	return -1;
}

/* An object's key and its ':': 0 with the key's n bytes at *key, or -1 (failed). */
static int key_colon(struct parser *ps, const char **key, size_t *n)
{
	if (ps->p >= ps->end || *ps->p != '"') {
		fail(ps, "a string key expected");
		return -1;
	}
	ps->p++;
	if (string(ps, key, n) < 0)
		return -1;
	skip_space(ps);
	if (ps->p >= ps->end || *ps->p != ':') {
		fail(ps, "':' expected");
		return -1;
	}
	ps->p++;
	return 0;
}

static json_t *array(struct parser *ps, struct within in)
{
	json_t *a = json_array(), *e;
	int more;

	if (open_empty(ps, ']'))
		return a;
	do {
		if (in.max_items && json_array_size(a) == in.max_items) {
			fail(ps, "a list of more than %zu entries", in.max_items);
			break;
		}
		if (!(e = value(ps, 1, in)) || json_array_append_new(a, e))
			break;
		if (!(more = next_entry(ps, ']')))
			return a;
	} while (more > 0);
	json_decref(a);
	return NULL;
}

static int skip(struct parser *ps);

/* The entry of keep for the key of n bytes at key, or NULL. */
static const struct mtc_json_keep *kept(const struct mtc_json_keep *keep, const char *key, size_t n)
{
	for (; keep && keep->key; keep++)
		if (strlen(keep->key) == n && !memcmp(keep->key, key, n))
			return keep;
	return NULL;
}

static json_t *object(struct parser *ps, struct within in)
{
	const struct mtc_json_keep *k = NULL;
	json_t *o = json_object(), *v;
	const char *key;
	char *copy;
	size_t n;
	int more;

	if (open_empty(ps, '}'))
		return o;
	do {
		if (key_colon(ps, &key, &n) < 0)
			break;
		copy = NULL;
		if (key == ps->text) /* the value may decode into ps->text too */
			memcpy(copy = xmalloc(n + 1), key, n);
		if (ps->filtered && !(k = kept(in.keep, key, n))) {
			free(copy);
			if (skip(ps) < 0)
				break;
		} else {
			struct within sub = in;
			if (k)
				sub = (struct within){ k->sub, k->max_items, k->max_bytes };
			v = value(ps, 0, sub);
			if (v && json_object_setn_new_nocheck(o, copy ? copy : key, n, v))
				v = NULL;
			free(copy);
			if (!v)
				break;
		}
		if (!(more = next_entry(ps, '}')))
			return o;
	} while (more > 0);
	json_decref(o);
	return NULL;
}

/*
 * A value read and dropped: its syntax checked as value() would, to the same
 * depth, with nothing built (a number or a literal is made and freed).
 */
static int skip(struct parser *ps)
{
	const char *s;
	size_t n;
	json_t *v;
	int rc = 0;

	skip_space(ps);
	if (ps->p >= ps->end)
		return fail(ps, "unexpected end of input"), -1;
	if (++ps->depth > MAX_DEPTH)
		return fail(ps, "nested deeper than %d", MAX_DEPTH), -1;
	if (*ps->p == '{' || *ps->p == '[') {
		char close = *ps->p == '{' ? '}' : ']';
		if (!open_empty(ps, close))
			do {
				if ((close == '}' && (rc = key_colon(ps, &s, &n)) < 0) ||
				    (rc = skip(ps)) < 0)
					break;
			} while ((rc = next_entry(ps, close)) > 0);
	} else if (*ps->p == '"') {
		ps->p++;
		rc = string(ps, &s, &n);
	} else {
		v = *ps->p == '-' || is_digit(ps->p, ps->end) ? number(ps, NULL) : literal(ps);
		rc = v ? 0 : -1;
		json_decref(v);
	}
	ps->depth--;
	return rc;
}

/* A value; in an array, a string or an integer equal to a shared one is that one. */
static json_t *value(struct parser *ps, int in_array, struct within in)
{
	const struct mtc_json_atoms *shared = in_array ? ps->atoms : NULL;
	json_t *v;
	const char *s;
	size_t n;

	skip_space(ps);
	if (ps->p >= ps->end)
		return fail(ps, "unexpected end of input");
	if (++ps->depth > MAX_DEPTH)
		return fail(ps, "nested deeper than %d", MAX_DEPTH);
	switch (*ps->p) {
	case '{': v = object(ps, in); break;
	case '[': v = array(ps, in); break;
	case '"':
		ps->p++;
		if (string(ps, &s, &n) < 0)
			v = NULL;
		else if (in.max_bytes && n > in.max_bytes)
			v = fail(ps, "a string of more than %zu bytes", in.max_bytes);
		else if ((v = mtc_json_atom_string(shared, s, n)))
			json_incref(v);
		else
			v = json_stringn_nocheck(s, n);
		break;
	default: v = *ps->p == '-' || is_digit(ps->p, ps->end) ? number(ps, shared) : literal(ps);
	}
	ps->depth--;
	return v;
}

static json_t *parse(const char *buf, size_t len, const struct mtc_json_atoms *atoms,
		     const struct mtc_json_keep *keep, char *err, size_t errlen)
{
	struct parser ps = { .p = buf,
			     .start = buf,
			     .end = buf + len,
			     .atoms = atoms,
			     .err = err,
			     .errlen = errlen,
			     .filtered = keep != NULL };
	json_t *v = NULL;

	if (errlen)
		*err = '\0';
	skip_space(&ps);
	if (ps.p >= ps.end || (*ps.p != '{' && *ps.p != '['))
		fail(&ps, "'{' or '[' expected");
	else if ((v = value(&ps, 0, (struct within){ keep, 0, 0 }))) {
		skip_space(&ps);
		if (ps.p < ps.end) {
			fail(&ps, "end of input expected");
			json_decref(v);
			v = NULL;
		}
	}
	free(ps.text);
	return v;
}

json_t *mtc_json_parse(const char *buf, size_t len, const struct mtc_json_atoms *atoms, char *err,
		       size_t errlen)
{
	return parse(buf, len, atoms, NULL, err, errlen);
}

json_t *mtc_json_parse_kept(const char *buf, size_t len, const struct mtc_json_atoms *atoms,
			    const struct mtc_json_keep *keep, char *err, size_t errlen)
{
	static const struct mtc_json_keep none[] = { { NULL } };
	return parse(buf, len, atoms, keep ? keep : none, err, errlen);
}
