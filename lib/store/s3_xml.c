#include "s3_xml.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "xalloc.h"

static const char *find(const char *p, const char *end, const char *s)
{
	size_t n = strlen(s);

	for (; p + n <= end; p++)
		if (!memcmp(p, s, n))
			return p;
	return NULL;
}

static size_t unescape(const char *p, const char *end, char *out)
{
	static const struct {
		const char *name;
		char c;
	} ents[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' }
	};
	size_t n = 0;

	while (p < end) {
		size_t i, k = sizeof ents / sizeof ents[0];
		if (*p != '&') {
			out[n++] = *p++;
			continue;
		}
		for (i = 0; i < k; i++)
			if ((size_t)(end - p) >= strlen(ents[i].name) &&
			    !memcmp(p, ents[i].name, strlen(ents[i].name)))
				break;
		if (i < k) {
			out[n++] = ents[i].c;
			p += strlen(ents[i].name);
		} else if (p + 2 < end && p[1] == '#') {
			const char *semi = memchr(p, ';', (size_t)(end - p));
			char *stop;
			unsigned long cp = p[2] == 'x' ? strtoul(p + 3, &stop, 16)
						       : strtoul(p + 2, &stop, 10);
			if (!semi || stop != semi || cp == 0 || cp > 0x10FFFF) {
				out[n++] = *p++;
				continue;
			}
			n += mtc_utf8_put(out + n, (unsigned)cp);
			p = semi + 1;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return n;
}

char *mtc_s3_xml_text(const char *xml, size_t len, const char *tag)
{
	const char *end = xml + len, *open, *close;
	char *otag = xasprintf("<%s>", tag), *ctag = xasprintf("</%s>", tag), *out = NULL;

	open = find(xml, end, otag);
	close = open ? find(open + strlen(otag), end, ctag) : NULL;
	if (close) {
		open += strlen(otag);
		out = xmalloc((size_t)(close - open) + 1);
		unescape(open, close, out);
	}
	free(otag);
	free(ctag);
	return out;
}
