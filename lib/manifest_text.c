#include "manifest_text.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utf8.h"
#include "xalloc.h"

#define FIELD_MAX PATH_MAX
#define RELEASE_STEP (1 << 20)

struct cursor {
	const char *start, *p, *end;
	char *err;
	size_t errlen;
};

static int bad(struct cursor *c, const char *what)
{
	snprintf(c->err, c->errlen, "manifest is not JSON of its form: %s at byte %zu", what,
		 (size_t)(c->p - c->start));
	return -1;
}

static void blanks(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int expect(struct cursor *c, char ch)
{
	blanks(c);
	if (c->p == c->end || *c->p != ch) {
		char what[16];
		snprintf(what, sizeof what, "'%c' expected", ch);
		return bad(c, what);
	}
	c->p++;
	return 0;
}

static int hex4(struct cursor *c, unsigned *u)
{
	*u = 0;
	for (int i = 0; i < 4; i++, c->p++) {
		char h = c->p < c->end ? *c->p : 0;
		int v = h >= '0' && h <= '9'   ? h - '0'
			: h >= 'a' && h <= 'f' ? h - 'a' + 10
			: h >= 'A' && h <= 'F' ? h - 'A' + 10
					       : -1;
		if (v < 0)
			return bad(c, "a bad \\u escape");
		*u = *u << 4 | (unsigned)v;
	}
	return 0;
}

/* A JSON string into out (at most FIELD_MAX bytes, no NUL inside). */
static int string(struct cursor *c, char *out)
{
	size_t n = 0;

	if (expect(c, '"') < 0)
		return -1;
	while (c->p < c->end && *c->p != '"') {
		unsigned char ch = (unsigned char)*c->p++;
		char buf[4];
		size_t k = 1;
		buf[0] = (char)ch;
		if (ch < 0x20)
			return bad(c, "a control character in a string");
		if (ch == '\\') {
			char e = c->p < c->end ? *c->p++ : 0;
			unsigned u, lo;
			switch (e) {
			case '"':
			case '\\':
			case '/': buf[0] = e; break;
			case 'b': buf[0] = '\b'; break;
			case 'f': buf[0] = '\f'; break;
			case 'n': buf[0] = '\n'; break;
			case 'r': buf[0] = '\r'; break;
			case 't': buf[0] = '\t'; break;
			case 'u':
				if (hex4(c, &u) < 0)
					return -1;
				if (u >= 0xd800 && u < 0xdc00) {
					if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u')
						return bad(c, "a lone surrogate");
					c->p += 2;
					if (hex4(c, &lo) < 0 || lo < 0xdc00 || lo >= 0xe000)
						return bad(c, "a lone surrogate");
					u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
				} else if (u >= 0xdc00 && u < 0xe000) {
					return bad(c, "a lone surrogate");
				}
				if (u == 0)
					return bad(c, "a NUL in a string");
				k = mtc_utf8_put(buf, u);
				break;
			default: return bad(c, "a bad escape");
			}
		}
		if (n + k > FIELD_MAX)
			return bad(c, "a string too long");
		memcpy(out + n, buf, k);
		n += k;
	}
	if (c->p == c->end)
		return bad(c, "an unterminated string");
	c->p++;
	out[n] = '\0';
	return 0;
}

/* An integer (no fraction, no exponent), or -1. */
static int integer(struct cursor *c, long long *v)
{
	int neg = 0, digits = 0;
	unsigned long long x = 0;

	blanks(c);
	if (c->p < c->end && *c->p == '-')
		neg = 1, c->p++;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		if (x > (unsigned long long)LLONG_MAX / 10)
			return bad(c, "a number too large");
		x = x * 10 + (unsigned long long)(*c->p++ - '0');
		digits++;
	}
	if (!digits || x > (unsigned long long)LLONG_MAX ||
	    (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E')))
		return bad(c, "an integer expected");
	*v = neg ? -(long long)x : (long long)x;
	return 0;
}

/* The value of a key this form does not use: a string, a number or a literal. */
static int skip_value(struct cursor *c, char *scratch)
{
	static const char *const literals[] = { "true", "false", "null" };
	long long v;

	blanks(c);
	if (c->p < c->end && *c->p == '"')
		return string(c, scratch);
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(literals[i]);
		if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, literals[i], n)) {
			c->p += n;
			return 0;
		}
	}
	if (integer(c, &v) == 0)
		return 0;
	return bad(c, "an unexpected value");
}

struct fields {
	char path[FIELD_MAX + 1], type[FIELD_MAX + 1], digest[FIELD_MAX + 1];
	long long size;
	int seen; /* bits: path 1, type 2, size 4, digest 8 */
};

static int object(struct cursor *c, struct fields *f, char *key)
{
	f->seen = 0;
	if (expect(c, '{') < 0)
		return -1;
	blanks(c);
	if (c->p < c->end && *c->p == '}')
		return c->p++, 0;
	for (;;) {
		int rc;
		if (string(c, key) < 0 || expect(c, ':') < 0)
			return -1;
		if (!strcmp(key, "path"))
			rc = string(c, f->path), f->seen |= 1;
		else if (!strcmp(key, "type"))
			rc = string(c, f->type), f->seen |= 2;
		else if (!strcmp(key, "size"))
			rc = integer(c, &f->size), f->seen |= 4;
		else if (!strcmp(key, "digest"))
			rc = string(c, f->digest), f->seen |= 8;
		else
			rc = skip_value(c, key);
		if (rc < 0)
			return -1;
		blanks(c);
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			continue;
		}
		return expect(c, '}');
	}
}

/* mapped: text is a private file mapping, whose pages behind the cursor are dropped as it goes. */
static int parse(const char *text, size_t len, struct mtc_manifest *m, char *err, size_t errlen,
		 int mapped)
{
	struct cursor c = { text, text, text + len, err, errlen };
	const char *released = text;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct fields *f = xmalloc(sizeof *f);
	char *key = xmalloc(FIELD_MAX + 1);
	int rc = -1;

	mtc_manifest_init(m);
	if (expect(&c, '[') < 0)
		goto out;
	blanks(&c);
	if (c.p < c.end && *c.p == ']') {
		c.p++;
	} else {
		for (size_t i = 0;; i++) {
			if (object(&c, f, key) < 0)
				goto out;
			if (f->seen != 15) {
				snprintf(err, errlen,
					 "manifest entry %zu: needs path, type, size and digest", i);
				goto out;
			}
			if (mtc_manifest_add_entry(m, f->path, f->type, f->size, f->digest, i, err,
						   errlen) < 0)
				goto out;
			if (mapped && (size_t)(c.p - released) >= RELEASE_STEP) {
				const char *upto = text + ((size_t)(c.p - text) & ~(page - 1));
				madvise((void *)released, (size_t)(upto - released), MADV_DONTNEED);
				released = upto;
			}
			blanks(&c);
			if (c.p < c.end && *c.p == ',') {
				c.p++;
				continue;
			}
			if (expect(&c, ']') < 0)
				goto out;
			break;
		}
	}
	blanks(&c);
	if (c.p != c.end) {
		bad(&c, "text after the array");
		goto out;
	}
	rc = mtc_manifest_seal(m, err, errlen);
out:
	if (rc < 0)
		mtc_manifest_free(m);
	free(f);
	free(key);
	return rc;
}

int mtc_manifest_parse(const char *text, size_t len, struct mtc_manifest *m, char *err, size_t errlen)
{
	return parse(text, len, m, err, errlen, 0);
}

int mtc_manifest_parse_fd(int fd, size_t max, struct mtc_manifest *m, char *err, size_t errlen)
{
	struct stat st;
	void *text;
	int rc;

	mtc_manifest_init(m);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		snprintf(err, errlen, "manifest is not a regular file of at most %zu bytes", max);
		return -1;
	}
	if (st.st_size == 0)
		return parse("", 0, m, err, errlen, 0);
	text = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (text == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the manifest: %s", strerror(errno));
		return -1;
	}
	madvise(text, (size_t)st.st_size, MADV_SEQUENTIAL);
	rc = parse(text, (size_t)st.st_size, m, err, errlen, 1);
	munmap(text, (size_t)st.st_size);
	return rc;
}

char *mtc_manifest_text(const struct mtc_manifest *m)
{
	json_t *j = mtc_manifest_to_json(m);
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return text;
}
