/* coordinator/webhook_addr.h - which addresses a webhook may reach: none inside the
 * coordinator's own networks unless an admin named the host (--webhook-hosts). Two checks
 * use it: the URL's host when a subscription is made (a literal address in any spelling
 * libcurl or the resolver accepts: 127.1, 2130706433, 0x7f000001, 0177.0.0.1, [::127.0.0.1],
 * [::ffff:10.0.0.1], [fe80::1%25lo]; and localhost with its subdomains), and each address a
 * delivery's connection is about to use (after resolution: coordinator/webhook.c's socket
 * callback), so a name that resolves to such an address reaches nothing either. Pure. */
#ifndef PACER_WEBHOOK_ADDR_H
#define PACER_WEBHOOK_ADDR_H

#include <sys/socket.h>

/* What an address is when a webhook may not call it: "loopback", "private", "link-local",
 * "unspecified", "multicast" or "reserved" (IPv4-mapped, IPv4-compatible, NAT64 and 6to4
 * IPv6 forms by the IPv4 address they carry), or NULL for an address that may be called.
 * Families other than IPv4 and IPv6 are "reserved". */
const char *webhook_addr_kind(const struct sockaddr *sa);

/* The same for a URL's host as the URL spells it (an IPv6 literal without its brackets,
 * its zone "%25..." or "%..." allowed): a literal address in any form inet_aton or
 * inet_pton reads, or localhost / *.localhost (a trailing dot allowed), which libcurl
 * answers itself as loopback. NULL for a name: what it resolves to is checked at
 * delivery. */
const char *webhook_host_kind(const char *host);

#endif
