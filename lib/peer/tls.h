#ifndef MTC_TLS_H
#define MTC_TLS_H

#include <stddef.h>

#include <curl/curl.h>

/*
 * TLS between the nodes (mtc(7) §4.4). One directory holds what a node
 * needs, laid out as a Kubernetes TLS Secret (cert-manager's) is mounted:
 *   ca.crt    the CA that signs every node's certificate: servers and
 *             clients are checked against it
 *   tls.crt   this node's certificate (chain), served by the daemon and
 *             shown as the client certificate
 *   tls.key   its private key
 * A client needs ca.crt only; without tls.crt it can reach the probes and
 * metrics of a daemon but not its data (mutual TLS).
 */
struct mtc_tls_files {
	char ca[4096], cert[4096], key[4096];
	int has_cert; /* tls.crt and tls.key both present */
};

/* The TLS dir: --tls-dir when given, else $MTC_TLS_DIR, else NULL (no TLS). */
const char *mtc_tls_dir_path(const char *given);

/*
 * Checks dir: ca.crt readable, tls.crt and tls.key both present or both
 * absent, and the key not readable by others (a warning). need_cert: a
 * server, which cannot do without them. 0, or -1 with err.
 */
int mtc_tls_files(const char *dir, int need_cert, struct mtc_tls_files *f, char *err, size_t errlen);

/*
 * This process's client side: the dir given here (--tls-dir, else
 * $MTC_TLS_DIR) is what every later mtc_tls_curl uses. 0, or -1 with err.
 */
int mtc_tls_client_setup(const char *given, char *err, size_t errlen);

/*
 * Prepares a curl handle for url. With TLS set up: an https:// url is
 * checked against ca.crt and shows tls.crt; an http:// url is refused
 * (the token would cross the network in clear) with -1 and err. Without
 * TLS, nothing is changed. h NULL: url is only checked.
 */
int mtc_tls_curl(CURL *h, const char *url, char *err, size_t errlen);

/* The rule of mtc_tls_curl alone: 0 when url may be used, else -1 with err. */
int mtc_tls_url_check(const char *url, char *err, size_t errlen);

/* 1 when this process's clients use TLS (a usable TLS dir was set up). */
int mtc_tls_client_on(void);

/*
 * The client side of a raw connection (peer_http.h): the TLS handshake
 * on tcp (connected, nonblocking) with host, checked against ca.crt and
 * showing tls.crt, by deadline (mtc_now() clock) unless *stop is set first
 * (stop may be NULL); then a relay thread (tls_relay.h) owns tcp and the
 * returned fd, nonblocking, is the plain side: close it when done. -1 with
 * err (tcp closed) when the handshake failed.
 */
int mtc_tls_connect(int tcp, const char *host, double deadline, const int *stop, char *err,
		    size_t errlen);

#endif
