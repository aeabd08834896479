#include "peer_client_int.h"

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t want = size * n;
	ssize_t got;

	if (c->reader) {
		got = mtc_wire_reader_read(c->reader, buf, want, c->thread_why, sizeof c->thread_why);
		if (got < 0) {
			c->thread_rc = -1;
			return CURL_READFUNC_ABORT;
		}
		c->bytes += got;
		return (size_t)got;
	}
	if (c->up_mem) {
		size_t left = c->up_len - c->up_off;
		if (want > left)
			want = left;
		memcpy(buf, c->up_mem + c->up_off, want);
		c->up_off += want;
		c->bytes += (long long)want;
		return want;
	}
	do
		got = read(c->up_fd, buf, want);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return CURL_READFUNC_ABORT;
	c->bytes += got;
	return (size_t)got;
}

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n;

	if (c->code == 0)
		return len; /* filled in by the header callback */
	if (c->extracting) {
		if (c->code >= 300) {
			mtc_buf_append(&c->body, p, len);
			return len;
		}
		if (mtc_ring_offer(&c->ring, p, len) < 0)
			return 0; /* the extractor refused the stream */
		c->bytes += (long long)len;
		return len;
	}
	if (c->code >= 300 || c->down_fd < 0) {
		mtc_buf_append(&c->body, p, len);
		return len;
	}
	if (mtc_write_all(c->down_fd, p, len) < 0)
		return 0;
	mtc_blake3_update(&c->file_hash, p, len);
	c->bytes += (long long)len;
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	long code;
	if (n * size > 5 && !strncmp(p, "HTTP/", 5) && sscanf(p, "HTTP/%*s %ld", &code) == 1 &&
	    code >= 200)
		c->code = code;
	else if (n * size > 11 && !strncasecmp(p, "X-Mtc-Size:", 11))
		c->x_size = strtoll(p + 11, NULL, 10);
	else if (n * size > 20 && !strncasecmp(p, "Accept-Ranges: bytes", 20))
		c->accept_ranges = 1;
	return size * n;
}

static void *tree_reader(void *arg)
{
	struct call *c = arg;
	c->thread_rc = mtc_wire_extract_from(mtc_ring_next, &c->ring, c->tree_root, c->limits,
					     c->expected, &c->got_list, c->thread_why,
					     sizeof c->thread_why) == MTC_OK
			       ? 0
			       : -1;
	mtc_ring_done(&c->ring);
	return NULL;
}

static int start_extractor(struct call *c, const char *root)
{
	c->tree_root = root;
	mtc_ring_init(&c->ring, RING_BATCH);
	if (pthread_create(&c->thread, NULL, tree_reader, c)) {
		mtc_ring_free(&c->ring);
		errno = EAGAIN;
		return -1;
	}
	c->extracting = 1;
	return 0;
}

static int prepare(struct call *c)
{
	c->up_fd = c->down_fd = -1;
	c->up_off = 0;
	c->bytes = 0;
	c->code = 0;
	c->x_size = -1;
	c->accept_ranges = 0;
	mtc_buf_free(&c->body);
	mtc_buf_init(&c->body, MTC_HTTP_ANSWER_MAX);
	c->got[0] = '\0';
	mtc_wire_list_free(&c->got_list);
	c->thread_rc = 0;
	c->thread_why[0] = '\0';
	mtc_blake3_init(&c->file_hash);
	if (c->up_path && !c->up_tree && c->raw &&
	    !(c->reader = mtc_wire_reader_open_file(c->up_path, c->range ? c->range->off : 0,
						    c->range ? c->range->size : -1, &c->up_total,
						    c->thread_why, sizeof c->thread_why))) {
		c->thread_rc = -1;
		return -1;
	}
	if (c->up_path && !c->up_tree && !c->raw &&
	    (c->up_fd = open(c->up_path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (c->up_path && c->up_tree &&
	    !(c->reader = c->up_list ? mtc_wire_reader_open_list(c->up_path, c->up_list, c->up_n,
								 &c->up_total, c->thread_why,
								 sizeof c->thread_why)
				     : mtc_wire_reader_open(c->up_path, &c->up_total, c->thread_why,
							    sizeof c->thread_why))) {
		errno = ENOENT;
		c->thread_rc = -1;
		return -1;
	}
	if (c->down_path && !c->down_tree &&
	    (c->down_fd = open(c->down_path,
			       c->range ? O_RDWR | O_CLOEXEC : O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			       0644)) < 0)
		return -1;
	if (c->down_path && c->down_tree) {
		if (!c->down_shared &&
		    (mtc_remove_tree(c->down_path) < 0 || mkdir(c->down_path, 0755) < 0))
			return -1;
		if (!c->raw && start_extractor(c, c->down_path) < 0)
			return -1;
	}
	return 0;
}

/* Closes the call's files; what arrived is made durable when it is published (object.h). */
static void finish_fds(struct call *c)
{
	if (c->down_fd >= 0 && !c->down_tree && !c->raw) { /* else the socket reader hashed it */
		uint8_t h[MTC_BLAKE3_OUT_LEN];
		mtc_blake3_final(&c->file_hash, h, sizeof h);
		mtc_hex(h, sizeof h, c->got);
	}
	if (c->up_fd >= 0)
		close(c->up_fd);
	if (c->down_fd >= 0)
		close(c->down_fd);
	if (c->extracting) {
		mtc_ring_end(&c->ring);
		pthread_join(c->thread, NULL);
		mtc_ring_free(&c->ring);
		c->extracting = 0;
	}
	mtc_wire_reader_close(c->reader);
	c->reader = NULL;
	c->up_fd = c->down_fd = -1;
}

static void first_line(const char *body, char *out, size_t len)
{
	size_t n = body ? strcspn(body, "\n") : 0;
	snprintf(out, len, "%.*s", (int)(n < 300 ? n : 300), body ? body : "");
}

/* The raw mode (peer_http.h): a PUT from c->reader, or a GET into c->down_fd or the tree. */
static enum mtc_http_end send_raw(const struct mtc_http_opts *o, struct call *c, double deadline,
				  char *err, size_t errlen)
{
	struct mtc_http_call hp = { .url = o->url,
				    .token = o->token,
				    .content_type = c->up_tree ? "application/x-tar"
							       : "application/octet-stream",
				    .body = c->reader,
				    .length = c->up_total,
				    .deadline = deadline,
				    .stall_s = (int)o->stall_s,
				    .upgrade = c->up_tree,
				    .fd = c->down_fd,
				    .range = c->range,
				    .root = c->down_tree ? c->down_path : NULL,
				    .limits = c->limits,
				    .expected = c->expected,
				    .got = &c->got_list,
				    .stop = (const int *)c->cancel };
	enum mtc_http_end end = c->up_path ? mtc_http_put(&hp, err, errlen)
					   : mtc_http_get(&hp, err, errlen);

	c->bytes = c->up_path ? hp.sent : hp.received;
	if (c->down_path && !c->down_tree && !c->range)
		memcpy(c->got, hp.digest, sizeof c->got);
	c->code = hp.code;
	mtc_buf_free(&c->body);
	c->body = hp.answer;
	if (end == MTC_HTTP_LOCAL) {
		c->thread_rc = -1;
		snprintf(c->thread_why, sizeof c->thread_why, "%s", err);
	}
	return end;
}

static int cancelled(const volatile sig_atomic_t *cancel) { return cancel && *cancel; }

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	return cancelled(((struct call *)arg)->cancel);
}

/* Through libcurl: every method, bodies from c's source, answers into c's sink. */
static enum mtc_http_end send_curl(const struct mtc_http_opts *o, struct call *c, char *err,
				   size_t errlen)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char errbuf[CURL_ERROR_SIZE];
	enum mtc_http_end end;
	CURLcode cc;

	if (!h) {
		snprintf(err, errlen, "cannot start curl");
		return MTC_HTTP_UNREACHED;
	}
	mtc_http_setup(h, o, &hdr, errbuf, err, errlen);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	if (c->cancel) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	if (!strcmp(c->method, "HEAD"))
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (!strcmp(c->method, "POST")) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	if (!strcmp(c->method, "DELETE"))
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	if (!strcmp(c->method, "PUT")) {
		struct stat st;
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, c);
		if (c->up_mem)
			curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->up_len);
		else if (c->up_tree)
			curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->up_total);
		else if (fstat(c->up_fd, &st) == 0)
			curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
		hdr = curl_slist_append(hdr, c->up_tree ? "Content-Type: application/x-tar"
							: "Content-Type: application/octet-stream");
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	cc = curl_easy_perform(h);
	end = mtc_http_end_of(cc);
	if (end == MTC_HTTP_ANSWERED)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->code);
	else
		snprintf(err, errlen, "%s", *errbuf ? errbuf : curl_easy_strerror(cc));
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return end;
}

/* One attempt: 0, RETRY, or a final result, with err. */
int pcli_attempt(const struct mtc_peer_client *pc, struct call *c, double deadline, char *err,
		 size_t errlen)
{
	double left = deadline - mtc_now();
	struct mtc_http_opts o = { .url = c->url,
				   .token = pc->token,
				   .idempotent = !c->once,
				   .tls = mtc_tls_curl,
				   .timeout_s = left > 0.001 ? left : 0.001,
				   .connect_s = 10,
				   .stall_s = 60,
				   .bulk = 1 };
	char why[CURL_ERROR_SIZE] = "", line[320];
	enum mtc_http_end end;
	int answered, rc;

	if (cancelled(pc->cancel)) {
		snprintf(err, errlen, "stopped");
		return MTC_FAILURE;
	}
	if (mtc_http_check(&o, err, errlen) < 0)
		return MTC_FAILURE;
	c->cancel = pc->cancel;
	c->raw = ((!strcmp(c->method, "PUT") && c->up_path) ||
		  (!strcmp(c->method, "GET") && c->down_path)) &&
		 mtc_http_usable(c->url);
	if (prepare(c) < 0) {
		if (c->thread_rc < 0)
			snprintf(err, errlen, "cannot send '%s': %s", c->up_path, c->thread_why);
		else
			snprintf(err, errlen, "'%s': %s", c->up_path ? c->up_path : c->down_path,
				 strerror(errno));
		finish_fds(c);
		return MTC_FAILURE;
	}
	end = c->raw ? send_raw(&o, c, deadline, why, sizeof why) : send_curl(&o, c, why, sizeof why);
	answered = end == MTC_HTTP_ANSWERED || end == MTC_HTTP_LOCAL; /* LOCAL: thread_rc says why */
	finish_fds(c);
	if (answered && c->code >= 300) {
		first_line(c->body.p, line, sizeof line);
		snprintf(err, errlen, "'%s': HTTP %ld%s%s", c->url, c->code, *line ? ": " : "", line);
		rc = c->code == 404				     ? MTC_NOTFOUND
		     : c->code == 428				     ? NEEDS_MANIFEST
		     : mtc_http_transient(c->code) || c->code == 422 ? RETRY
								     : MTC_FAILURE;
	} else if (c->thread_rc < 0 && c->down_path && (c->down_tree || c->range)) {
		snprintf(err, errlen, "'%s': rejected: %s", c->url, c->thread_why);
		c->code = 422;
		rc = RETRY;
	} else if (c->thread_rc < 0) {
		snprintf(err, errlen, "cannot send '%s': %s", c->up_path, c->thread_why);
		rc = MTC_FAILURE;
	} else if (end == MTC_HTTP_DEADLINE && mtc_now() >= deadline) {
		snprintf(err, errlen, "'%s': %s", c->url, why);
		rc = MTC_TIMEOUT;
	} else if (!answered && cancelled(pc->cancel)) {
		snprintf(err, errlen, "'%s': stopped", c->url);
		rc = MTC_FAILURE;
	} else if (!answered) {
		snprintf(err, errlen, "'%s': %s", c->url, why);
		c->code = 0;
		rc = RETRY;
	} else {
		rc = 0;
	}
	return rc;
}

void pcli_free_call(struct call *c)
{
	free(c->url);
	mtc_buf_free(&c->body);
	mtc_wire_list_free(&c->got_list);
	memset(c, 0, sizeof *c);
}

char *pcli_object_url(const char *base, const char *name)
{
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	return xasprintf("%.*s/v1/objects/%s", (int)n, base, name);
}

char *pcli_uploads_url(const char *base, const char *rest)
{
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	return xasprintf("%.*s/v1/uploads/%s", (int)n, base, rest);
}
