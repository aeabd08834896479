#include "inventory.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "walk.h"
#include "xalloc.h"

int mtc_read_meta(const char *path, char hash[MTC_HASH_MAX + 1])
{
	char buf[MTC_HASH_MAX + 3];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n > MTC_HASH_MAX || !mtc_is_hash(buf)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(hash, buf, (size_t)n + 1);
	return 0;
}

/* A walk's visit (walk.h): each file's bytes into *arg; what is not a file or directory fails. */
static int add_bytes(const struct mtc_walk_entry *e, void *arg)
{
	long long *total = arg;
	if (e->error) {
		errno = e->error;
		return -1;
	}
	if (S_ISREG(e->st.st_mode))
		*total += e->st.st_size;
	else if (!S_ISDIR(e->st.st_mode))
		return -1;
	return 0;
}

long long mtc_tree_bytes(const char *path)
{
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	long long total = 0;
	struct stat st;
	struct mtc_walk w = { .root = path,
			      .flags = MTC_WALK_BENEATH,
			      .max_depth = 256,
			      .rootfd = fd,
			      .visit = add_bytes,
			      .arg = &total };

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
		total = -1;
	else if (S_ISREG(st.st_mode))
		total = st.st_size;
	else if (mtc_walk(&w) < 0)
		total = -1;
	close(fd);
	return total;
}

static int by_meta_name(const void *a, const void *b)
{
	return strcmp(((const struct mtc_inv_meta *)a)->name, ((const struct mtc_inv_meta *)b)->name);
}

static int by_hash(const void *a, const void *b)
{
	return strcmp(((const struct mtc_inv_data *)a)->hash, ((const struct mtc_inv_data *)b)->hash);
}

static void add_meta(struct mtc_inventory *inv, size_t *cap, const char *name,
		     const struct mtc_ckpt_name *n, const char *hash)
{
	struct mtc_inv_meta *m;
	if (inv->n_metas == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		inv->metas = xrealloc(inv->metas, *cap * sizeof *inv->metas);
	}
	m = &inv->metas[inv->n_metas++];
	snprintf(m->name, sizeof m->name, "%s", name);
	snprintf(m->job, sizeof m->job, "%s", n->job);
	m->step = n->step;
	m->node = n->rank;
	m->worker = n->worker;
	snprintf(m->hash, sizeof m->hash, "%s", hash);
}

static void add_data(struct mtc_inventory *inv, size_t *cap, const char *hash, long long size)
{
	if (inv->n_data == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		inv->data = xrealloc(inv->data, *cap * sizeof *inv->data);
	}
	snprintf(inv->data[inv->n_data].hash, sizeof inv->data[0].hash, "%s", hash);
	inv->data[inv->n_data++].size = size;
}

int mtc_inventory_scan(const char *dir, struct mtc_inventory *inv)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t mcap = 0, dcap = 0;

	memset(inv, 0, sizeof *inv);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		struct mtc_ckpt_name n;
		char hash[MTC_HASH_MAX + 1];
		char *path;

		if (strlen(e->d_name) >= sizeof inv->metas[0].name)
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		if (!mtc_parse_ckpt_name(e->d_name, &n) && n.ext == MTC_EXT_META) {
			if (!mtc_read_meta(path, hash))
				add_meta(inv, &mcap, e->d_name, &n, hash);
		} else if (!mtc_parse_data_name(e->d_name, hash)) {
			long long size = mtc_tree_bytes(path);
			if (size >= 0)
				add_data(inv, &dcap, hash, size);
		}
		free(path);
	}
	closedir(d);
	if (inv->n_metas)
		qsort(inv->metas, inv->n_metas, sizeof *inv->metas, by_meta_name);
	if (inv->n_data)
		qsort(inv->data, inv->n_data, sizeof *inv->data, by_hash);
	return 0;
}

json_t *mtc_inventory_to_json(const struct mtc_inventory *inv)
{
	json_t *metas = json_array(), *data = json_array();

	for (size_t i = 0; i < inv->n_metas; i++) {
		const struct mtc_inv_meta *m = &inv->metas[i];
		json_array_append_new(metas,
				      json_pack("{s:s, s:s, s:I, s:i, s:i, s:s}", "name", m->name, "job",
						m->job, "step", (json_int_t)m->step, "node", m->node,
						"worker", m->worker, "hash", m->hash));
	}
	for (size_t i = 0; i < inv->n_data; i++)
		json_array_append_new(data, json_pack("{s:s, s:I}", "hash", inv->data[i].hash, "size",
						      (json_int_t)inv->data[i].size));
	return json_pack("{s:o, s:o}", "metas", metas, "data", data);
}

int mtc_inventory_from_json(json_t *obj, struct mtc_inventory *inv, char *err, size_t errlen)
{
	json_t *metas, *data, *v;
	size_t i, mcap = 0, dcap = 0;

	memset(inv, 0, sizeof *inv);
	if (json_unpack(obj, "{s:o, s:o}", "metas", &metas, "data", &data) || !json_is_array(metas) ||
	    !json_is_array(data)) {
		snprintf(err, errlen, "an inventory needs arrays 'metas' and 'data'");
		return -1;
	}
	json_array_foreach (metas, i, v) {
		const char *name = NULL, *hash = NULL;
		struct mtc_ckpt_name n;
		if (json_unpack(v, "{s:s, s:s}", "name", &name, "hash", &hash) ||
		    strlen(name) >= sizeof inv->metas[0].name || mtc_parse_ckpt_name(name, &n) ||
		    n.ext != MTC_EXT_META || !mtc_is_hash(hash)) {
			snprintf(err, errlen, "inventory meta %zu: needs a .meta 'name' and a 'hash'",
				 i);
			goto fail;
		}
		add_meta(inv, &mcap, name, &n, hash);
	}
	json_array_foreach (data, i, v) {
		const char *hash = NULL;
		json_int_t size = -1;
		if (json_unpack(v, "{s:s, s:I}", "hash", &hash, "size", &size) || !mtc_is_hash(hash) ||
		    size < 0) {
			snprintf(err, errlen, "inventory data %zu: needs a 'hash' and a 'size'", i);
			goto fail;
		}
		add_data(inv, &dcap, hash, size);
	}
	return 0;
fail:
	mtc_inventory_free(inv);
	return -1;
}

void mtc_inventory_free(struct mtc_inventory *inv)
{
	free(inv->metas);
	free(inv->data);
	memset(inv, 0, sizeof *inv);
}

const struct mtc_inv_data *mtc_inventory_find_data(const struct mtc_inventory *inv, const char *hash)
{
	for (size_t i = 0; i < inv->n_data; i++)
		if (!strcmp(inv->data[i].hash, hash))
			return &inv->data[i];
	return NULL;
}
