#include "token_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "log.h"

char *mtc_read_token_file(const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *buf, *end;
	size_t len;

	if (mtc_read_file(path, 4096, &buf, &len) < 0) {
		snprintf(err, errlen, "cannot read token file '%s': %s", path,
			 errno == EFBIG ? "larger than 4096 bytes" : strerror(errno));
		return NULL;
	}
	end = buf + strcspn(buf, "\n");
	if (memchr(buf, '\0', len)) {
		snprintf(err, errlen, "token file '%s' holds a NUL byte", path);
		free(buf);
		return NULL;
	}
	while (end > buf && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	*end = '\0';
	if ((size_t)(end - buf) < MTC_TOKEN_MIN) {
		snprintf(err, errlen,
			 "token file '%s': the token is %s; it needs at least %d bytes "
			 "(e.g. openssl rand -hex 32)",
			 path, end == buf ? "empty" : "too short", MTC_TOKEN_MIN);
		free(buf);
		return NULL;
	}
	if (stat(path, &st) == 0 && (st.st_mode & 077))
		mtc_warn("token file '%s' is readable by group or others (mode %03o)", path,
			 (unsigned)(st.st_mode & 0777));
	return buf;
}

const char *mtc_peer_token_path(const char *given)
{
	const char *env = getenv("MTC_PEER_TOKEN_FILE");
	return given && *given ? given : env && *env ? env : NULL;
}
