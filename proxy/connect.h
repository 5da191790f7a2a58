/* egressd connect [--proxy URL] HOST PORT (docs/design.md 8): standard input and output through
 * a tunnel that the proxy opens to HOST:PORT, for an ssh ProxyCommand and git over SSH.
 *
 * The proxy is an HTTP proxy (http://[USER:TOKEN@]HOST[:PORT], a CONNECT request, Basic
 * credentials) or a SOCKS5 proxy (socks5h://... or socks5://..., RFC 1928 CONNECT with the name
 * as given, RFC 1929 credentials); without --proxy, the first of HTTPS_PROXY, https_proxy,
 * ALL_PROXY and all_proxy that is set.  The name is always resolved by the proxy. */
#ifndef EGRESSD_PROXY_CONNECT_H
#define EGRESSD_PROXY_CONNECT_H

/* argv[0] is "connect".  Returns the exit status: 0 when the tunnel ended normally, 1 when the
 * proxy refused it (its reason is printed to standard error: X-Egressd-Reason and the body's
 * line for HTTP, the reply code for SOCKS5), could not be reached, or the tunnel broke; 2 for a
 * usage error. */
int proxy_connect_main(int argc, char **argv);

#endif
