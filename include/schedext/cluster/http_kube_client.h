// NewHttpKubeClient: the KubeClient that talks to a real API server, over
// cpp-httplib and OpenSSL.
//
// What it does, and where it follows client-go:
//   * TLS: the server certificate is verified by OpenSSL against the
//     configured CAs only (CA data or file; the system store only when
//     neither is set), and its SAN must match the server's host name or IP
//     address (X509_VERIFY_PARAM, RFC 6125; no CN fallback, as Go). Client
//     certificates (mTLS) and insecure-skip-tls-verify are supported.
//   * Auth: `Authorization: Bearer <token>`. A token file is re-read when its
//     mtime or size changed (checked at most every
//     ClientConfig::token_file_check_interval), and at once after a 401; when
//     the re-read token differs, the request is retried once with it.
//     (client-go's cached file token source re-reads every minute and on 401
//     only resets its cache, without retrying.)
//   * Rate limit: a token bucket of ClientConfig::qps / burst, with the
//     reservation semantics of golang.org/x/time/rate that client-go's
//     flowcontrol uses (starts full; a caller without a token waits for its
//     own reserved slot). Starting a watch takes a token; its stream does not.
//   * Timeouts: ClientConfig::timeout bounds the connect and every read and
//     write (cpp-httplib's timeouts are per recv/send, not per response), so
//     a server that accepts a request and never answers fails after
//     `timeout` with kDeadlineExceeded. Transport failures are kUnavailable.
//   * Connections: keep-alive, TCP_NODELAY; a small pool, so concurrent
//     calls (binds from several scheduler connections) do not queue behind
//     each other. Each Watch has its own connection. A pooled connection
//     idle for longer than ClientConfig::idle_connection_timeout (60 s, below
//     kube-apiserver's 90 s idle close) is closed rather than reused.
//   * Stale connections (Go's net/http rule): a request that fails on a
//     reused keep-alive connection, reading or writing, before any byte of
//     the response arrived and not by a timeout, is sent once more on a new
//     connection — the server closed the idle connection as the request went
//     out. For every method: a Binding the server did execute answers 409 the
//     second time, and KubeBinder turns a 409 for the same node into success.
//     A failure after response bytes began, or on a new connection, is
//     returned as is (kUnavailable).
//   * Watch: the chunked response is split on '\n' (a line may span chunks;
//     '\r' before '\n' and empty lines are dropped) and each line is passed
//     to the callback as it arrives. CancelWatches() shuts the sockets of
//     running watches down (waking a blocked read at once) and makes later
//     Watch calls return OK immediately.
//
// Requests carry `User-Agent: <ClientConfig::user_agent>` and `Accept:
// application/json`; POST bodies `Content-Type: application/json`.
// `path_and_query` arguments are sent as given: the caller escapes them.
//
// Thread-safety: as KubeClient: every method may be called concurrently.
#ifndef SCHEDEXT_CLUSTER_HTTP_KUBE_CLIENT_H_
#define SCHEDEXT_CLUSTER_HTTP_KUBE_CLIENT_H_

#include <memory>

#include "schedext/cluster/client_config.h"
#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::cluster {

// Builds the client: parses `config.server`, loads the CA, client
// certificate and key (checking that they match) and the token. Does not
// connect. kInvalidArgument for a bad URL, unreadable or non-PEM material, a
// CA together with insecure mode, or a rate limit with burst < 1.
StatusOr<std::unique_ptr<KubeClient>> NewHttpKubeClient(const ClientConfig& config);

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_HTTP_KUBE_CLIENT_H_
