#ifndef MTC_S3_XML_H
#define MTC_S3_XML_H

#include <stddef.h>

/*
 * The text of the first <tag>...</tag> in an S3 or STS answer (malloc'd,
 * the five XML entities and numeric references undone), or NULL. Enough for
 * answers whose elements hold text and no markup of their own.
 */
char *mtc_s3_xml_text(const char *xml, size_t len, const char *tag);

#endif
