#ifndef MTC_HANDSHAKE_RANK_H
#define MTC_HANDSHAKE_RANK_H

/* mtc-handshake rank: this node's process id from the rank server, into jax-init-info.txt. */
struct rank_opts {
	const char *dir, *coordinator, *host, *token_file;
	int index, jax_port, json;
	double timeout_s;
};

int do_rank(const struct rank_opts *o);

#endif
