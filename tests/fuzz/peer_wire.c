/*
 * libFuzzer target: an untrusted tar stream into the peer upload extractor,
 * and its bytes as a path into the path check. Invariants: whatever the
 * input, the root holds only regular files and directories afterwards, and
 * for an accepted stream the manifest composed from what arrived equals
 * digest.h's manifest of the tree on disk.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "fsutil.h"
#include "peer/peer_wire.h"
#include "walk.h"

static int only_files_and_dirs(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path;
	(void)f;
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		abort();
	return flag == FTW_NS ? -1 : 0;
}

static char root[] = "/dev/shm/mtc-fuzz-peer-wire.XXXXXX";

static void remove_root(void) { mtc_remove_tree(root); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct mtc_wire_limits lim = { 1 << 20, 64, 8 };
	char why[512], got[66], want[MTC_DIGEST_LEN], *path = malloc(size + 1);
	struct mtc_wire_list list = { 0 };
	struct mtc_manifest built, disk;
	int fd;

	memcpy(path, data, size);
	path[size] = '\0';
	mtc_wire_check_path(path, 8, why, sizeof why);
	free(path);

	if (!ready) {
		if (!mkdtemp(root))
			abort();
		atexit(remove_root);
		ready = 1;
	}
	char *obj = malloc(strlen(root) + 8);
	strcpy(obj, root);
	strcat(obj, "/obj");
	mtc_remove_tree(obj);
	if (mkdir(obj, 0755) < 0)
		abort();
	fd = memfd_create("tar", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	mtc_manifest_init(&built);
	mtc_manifest_init(&disk);
	if (mtc_wire_extract(fd, obj, &lim, NULL, &list, why, sizeof why) == 0) {
		mtc_wire_manifest(&list, &built, got);
		if (mtc_digest_path(obj, 1, want, &disk) < 0 || strcmp(got, want) ||
		    mtc_manifest_compare(&disk, &built, why, sizeof why))
			abort();
	}
	mtc_wire_list_free(&list);
	mtc_manifest_free(&built);
	mtc_manifest_free(&disk);
	close(fd);
	if (nftw(obj, only_files_and_dirs, 16, FTW_PHYS) < 0)
		abort();
	mtc_remove_tree(obj);
	free(obj);
	return 0;
}
