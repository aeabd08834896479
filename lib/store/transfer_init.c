/*
 * The transfer engine set up for one backend (transfer.h): the store's
 * operations, the engine's for data and the backend's own for the rest; the
 * connection pool, the slice sizes and the backoff; and taken down. Apart
 * from transfer.c and transfer_get.c, so that neither needs the other's
 * half of the table.
 */
#include <stdlib.h>
#include <unistd.h>

#include "backoff.h"
#include "clock.h"
#include "transfer.h"
#include "xalloc.h"

void xfer_init(struct xfer *xf, struct mtc_store *s, const struct xfer_api *api, const char *prefix,
	       const char *retry_env, const struct mtc_store_ops *own)
{
	const char *base_ms = getenv(retry_env);

	xf->ops = (struct mtc_store_ops){ .put_file = xfer_put_file,
					  .put_buf = xfer_put_buf,
					  .put_many = xfer_put_many,
					  .get_file = xfer_get_file,
					  .get_buf = xfer_get_buf,
					  .get_range = xfer_get_range,
					  .get_many = xfer_get_many,
					  .list = own->list,
					  .stat = xfer_stat,
					  .del = xfer_delete,
					  .delete_prefix = own->delete_prefix,
					  .leftovers = own->leftovers,
					  .close = own->close };
	s->ops = &xf->ops;

	pthread_mutex_init(&xf->run_lock, NULL);
	xf->api = api;
	xf->prefix = *prefix ? xasprintf("%s/", prefix) : xstrdup("");
	xf->threshold = s->opt.slice_threshold;
	xf->slices = s->opt.slices;
	/* the opening range: small beside the threshold, since slicing waits for it */
	xf->first = xf->threshold / 16;
	if (xf->first > (8LL << 20))
		xf->first = 8LL << 20;
	if (xf->first < (64LL << 10))
		xf->first = 64LL << 10;
	xf->backoff_base = base_ms && *base_ms ? atoll(base_ms) / 1000.0
					       : mtc_backoff_of(MTC_BACKOFF_STORE)->base;
	xf->backoff_cap = mtc_backoff_of(MTC_BACKOFF_STORE)->cap;
	xf->seed = (unsigned)getpid() ^ (unsigned)(mtc_now() * 1e6);
	xf->multi = curl_multi_init();
	curl_multi_setopt(xf->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)s->opt.parallel);
	curl_multi_setopt(xf->multi, CURLMOPT_MAXCONNECTS, (long)s->opt.parallel + 4);
}

void xfer_close(struct xfer *xf)
{
	for (size_t i = 0; i < xf->n_idle; i++)
		curl_easy_cleanup(xf->idle[i]);
	free(xf->idle);
	if (xf->multi)
		curl_multi_cleanup(xf->multi);
	pthread_mutex_destroy(&xf->run_lock);
	free(xf->prefix);
}
