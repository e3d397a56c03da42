/* coordinator/webhook.h - webhooks: a JSON POST to a URL when a job (or an experiment)
 * ends, fails or is interrupted, signed with the subscription's secret (HMAC-SHA256 of
 * the body, header X-Pacer-Signature: sha256=HEX), retried with backoff. One thread follows
 * pacer:events (coord_events_wait) and queues deliveries; another makes the POSTs, each
 * subscription's one at a time and every subscription's at once (a libcurl multi handle),
 * so that no request, no tick and no other receiver ever waits for a receiver. The
 * subscriptions live in STATE_DIR/webhooks.json (0600: it holds the secrets, which no
 * answer and no log line shows); the last WEBHOOK_DELIVERIES_KEPT deliveries of each are
 * kept in memory for GET /api/v1/webhooks.
 *
 * Who may subscribe: an admin to any job (or all of them); a member to their own jobs
 * and experiments only (all of them, or one job named by "job"), WEBHOOKS_PER_MEMBER
 * subscriptions at most. A subscription is its owner's account's: it goes when the account
 * is removed, and never passes to a later account of the name. A URL is http or https,
 * without user or password, and its host on the allow-list (--webhook-hosts,
 * webhook_url_check): a host the list names is called at whatever address it resolves
 * to (the admin's word for it: a receiver on 127.0.0.1, an internal name); under "*",
 * any other host only at an address that is not loopback, private, link-local,
 * unspecified, multicast or reserved (coordinator/webhook_addr.h), checked on the literal
 * when the subscription is made and on each address a delivery connects to. */
#ifndef PACER_WEBHOOK_H
#define PACER_WEBHOOK_H

#include <stddef.h>

#include <jansson.h>

#include "coordinator.h"

#define WEBHOOKS_MAX 256
/* A member's own subscriptions at most, so that one member cannot fill the table for
 * everyone (a 429 names it); admins only meet WEBHOOKS_MAX, as they meet no count limit
 * of common/users.h. */
#define WEBHOOKS_PER_MEMBER 16
#define WEBHOOK_URL_MAX 512
#define WEBHOOK_SECRET_MIN 16
#define WEBHOOK_SECRET_MAX 256
#define WEBHOOK_EVENTS_MAX 8
#define WEBHOOK_DELIVERIES_KEPT 10
#define WEBHOOK_ATTEMPTS 6        /* a delivery's tries: at once, then after 1, 2, 4, 8, 16 s */
#define WEBHOOK_TIMEOUT_S 10      /* one POST, connection included */
#define WEBHOOK_HOSTS_DEFAULT "*" /* --webhook-hosts: any host, at public addresses only */

/* The event names a subscription may ask for (docs/openapi.json's WebhookEvent). */
extern const char *const WEBHOOK_EVENTS[];

typedef struct {
    char url[WEBHOOK_URL_MAX];
    char secret[WEBHOOK_SECRET_MAX + 1];
    char job[COORD_ID_MAX]; /* "" = every job the owner may see */
    unsigned events;        /* a bit per WEBHOOK_EVENTS entry */
} webhook_req_t;

/* A POST /api/v1/webhooks body: {"url", "events": [...], "secret", "job"?}. 0, or -1 with
 * err naming the field (an unknown event by name, a secret shorter than
 * WEBHOOK_SECRET_MIN, an unknown field). The URL is checked by webhook_url_check. */
int webhook_body_parse(const char *body, size_t len, const char *allow_hosts, webhook_req_t *out, char *err,
                       size_t errlen);
/* Whether url may be called: http:// or https://, a host (no user or password, no
 * spaces or control bytes; an IPv6 literal that is one), an optional port, on
 * allow_hosts: a comma-separated list of host names (case-insensitive, as spelled) or
 * "*", which allows any host but an internal address in any spelling and localhost
 * (webhook_host_kind; a list names those to allow them). 0, or -1 with err saying why. */
int webhook_url_check(const char *url, const char *allow_hosts, char *err, size_t errlen);
/* One POST of body to url as a delivery makes it (signed with secret, the same libcurl
 * options; each address it connects to checked by webhook_addr_kind unless
 * check_addresses is 0, as for a host --webhook-hosts names): 0 on a 2xx, else -1 with why
 * in the words GET /api/v1/webhooks shows, *status the HTTP status (0 without an answer).
 * For the tests: the daemon's deliveries go through its delivery thread. */
int webhook_post_once(const char *url, const char *secret, const char *body, int check_addresses, int *status,
                      char *why, size_t whylen);
/* The webhook event a pacer:events event is ("job.succeeded", ...), or NULL for none. */
const char *webhook_event_of(const json_t *ev);

typedef struct webhooks webhooks_t;

/* The daemon's webhooks: loads STATE_DIR/webhooks.json and starts their two threads.
 * NULL with err on a file that cannot be read (the daemon refuses to start: a
 * subscription silently dropped would be silent data loss). */
webhooks_t *webhooks_start(coordinator_t *c, const char *state_dir, const char *allow_hosts, char *err, size_t errlen);
void webhooks_stop(webhooks_t *w);
/* A removed user's subscriptions go with the account (coord_user_remove calls it through
 * c->users->removed); a subscription also names its owner's account by when it was created,
 * so one the removal missed (the account was removed in Redis, not by this daemon) is
 * removed at its next event rather than delivered to a later account of the name. */
void webhooks_user_removed(coordinator_t *c, const char *user);

/* The API's side (http/handlers_webhooks.c). COORD_EINVAL (400) with err for a bad body
 * or URL, COORD_EDENIED (403) for a member's subscription to a job that is not theirs,
 * COORD_ENOTFOUND for an unknown job or webhook, COORD_ELIMIT past WEBHOOKS_PER_MEMBER (a
 * member's) or WEBHOOKS_MAX,
 * COORD_ESTATE on a coordinator built without libcurl or a client handle. */
int coord_webhook_add(coordinator_t *c, const coord_caller_t *by, const char *body, size_t len, json_t **out, char *err,
                      size_t errlen);
/* {"webhooks": [{id, url, events, job, owner, created, deliveries: [...]}]}: an admin's
 * view has all of them, a member's their own (their name's, made by their account);
 * never a secret. COORD_ESTATE or COORD_EUNAVAIL with err. */
int coord_webhook_list(coordinator_t *c, const coord_caller_t *by, json_t **out, char *err, size_t errlen);
int coord_webhook_remove(coordinator_t *c, const coord_caller_t *by, const char *id, char *err, size_t errlen);

#endif
