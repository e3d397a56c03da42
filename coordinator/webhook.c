/* coordinator/webhook.c - see webhook.h. */
#include "webhook.h"

#include "coord_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

#ifdef PACER_HAVE_CURL
#include <curl/curl.h>
#endif

#include "clock.h"
#include "clog.h"
#include "errmsg.h"
#include "experiment.h"
#include "fs.h"
#include "jobstore.h"
#include "jsonbody.h"
#include "sha256.h"
#include "users.h"
#include "webhook_addr.h"

const char *const WEBHOOK_EVENTS[] = {"job.succeeded",        "job.failed",
                                      "job.cancelled",        "job.interrupted",
                                      "experiment.succeeded", "experiment.failed",
                                      "experiment.cancelled", NULL};

typedef struct {
    char id[32];
    char event[32];
    char job[COORD_ID_MAX];
    char status[12]; /* "pending", "delivered", "failed" */
    int attempts, http_status;
    char error[160];
    double time, next_at;
    char *body; /* while pending */
} wh_delivery_t;

typedef struct {
    char id[24];
    webhook_req_t req;
    char owner[USER_OWNER_MAX + 1];
    /* the owner's account: its created time (user_record_t), which a later account of the
     * same name never has; 0 for the daemon's own admin (no account) and for a
     * subscription from before it was recorded (then the name alone is checked) */
    double owner_since;
    int admin; /* made by an admin: every job's events (or its job's) */
    double created;
    wh_delivery_t dl[WEBHOOK_DELIVERIES_KEPT]; /* a ring, newest at (ndl - 1) % KEPT */
    int ndl;
    int busy; /* a POST of it under way (the delivery thread's) */
} wh_hook_t;

struct webhooks {
    coordinator_t *c;
    char path[PATH_MAX + 32];
    char allow[1024];
    pthread_mutex_t lock;
    pthread_t thread, deliverer; /* the events' follower, the deliveries' maker */
    int started, delivering, stop;
#ifdef PACER_HAVE_CURL
    CURLM *multi;
#endif
    wh_hook_t hooks[WEBHOOKS_MAX];
    int n;
    long next_id, next_delivery;
};

/* ---- the pure parts: the URL, the body, the event ------------------------------------------ */

/* Whether allow names host (case-insensitive; a fully qualified name's root dot aside). */
static int wh_host_listed(const char *host, const char *allow)
{
    size_t hl = strlen(host);
    if (hl > 1 && host[hl - 1] == '.') hl--;
    for (const char *p = allow; *p;) {
        size_t k = strcspn(p, ",");
        while (k && (*p == ' ')) p++, k--;
        size_t e = k;
        while (e && p[e - 1] == ' ') e--;
        if (e == hl && strncasecmp(p, host, hl) == 0) return 1;
        p += k;
        if (*p == ',') p++;
    }
    return 0;
}

/* webhook_url_check; with !check_host the host's place on the allow-list is not asked.
 * *named (may be NULL): 1 when the list names the host, so that the addresses it resolves to
 * are not checked (the admin's word for it), 0 when only "*" lets it in. */
static int wh_url_check(const char *url, const char *allow_hosts, int check_host, int *named, char *err, size_t errlen)
{
    if (named) *named = 0;
    size_t len = strlen(url);
    if (len == 0 || len >= WEBHOOK_URL_MAX)
        return errmsg(err, errlen, "url: empty or longer than %d bytes", WEBHOOK_URL_MAX - 1);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
            return errmsg(err, errlen, "url: a space, control or non-ASCII byte at offset %zu", i);
    const char *rest;
    if (strncasecmp(url, "http://", 7) == 0) rest = url + 7;
    else if (strncasecmp(url, "https://", 8) == 0) rest = url + 8;
    else return errmsg(err, errlen, "url: only http:// and https:// URLs are called");
    size_t auth = strcspn(rest, "/?#");
    if (memchr(rest, '@', auth)) return errmsg(err, errlen, "url: credentials (user@ or user:password@) are refused");
    char host[256];
    const char *h = rest, *end = rest + auth;
    if (*h == '[') { /* an IPv6 literal */
        const char *close = memchr(h, ']', auth);
        if (!close) return errmsg(err, errlen, "url: an IPv6 address without its ']'");
        h++;
        if ((size_t)(close - h) >= sizeof host) return errmsg(err, errlen, "url: host too long");
        memcpy(host, h, (size_t)(close - h));
        host[close - h] = 0;
        end = close + 1;
        if (end < rest + auth && *end != ':') return errmsg(err, errlen, "url: bytes after the IPv6 address's ']'");
        char bare[sizeof host];
        unsigned char a6[16];
        snprintf(bare, sizeof bare, "%.*s", (int)strcspn(host, "%"), host); /* a zone (%25lo) aside */
        if (inet_pton(AF_INET6, bare, a6) != 1) return errmsg(err, errlen, "url: [%s] is not an IPv6 address", host);
    } else {
        const char *colon = memchr(h, ':', auth);
        const char *he = colon ? colon : end;
        if ((size_t)(he - h) >= sizeof host) return errmsg(err, errlen, "url: host too long");
        memcpy(host, h, (size_t)(he - h));
        host[he - h] = 0;
        end = he;
    }
    if (!host[0]) return errmsg(err, errlen, "url: no host");
    if (end < rest + auth) { /* ":port" */
        const char *p = end + 1;
        long port = 0;
        int digits = 0;
        for (; p < rest + auth && *p >= '0' && *p <= '9' && digits < 6; p++, digits++) port = port * 10 + (*p - '0');
        if (!digits || p != rest + auth || port < 1 || port > 65535)
            return errmsg(err, errlen, "url: the port is not a number from 1 to 65535");
    }
    if (!check_host) return 0;
    const char *allow = allow_hosts && *allow_hosts ? allow_hosts : WEBHOOK_HOSTS_DEFAULT;
    if (wh_host_listed(host, allow)) {
        if (named) *named = 1;
        return 0;
    }
    if (!wh_host_listed("*", allow))
        return errmsg(err, errlen, "url: host %s is not on the coordinator's webhook allow-list (--webhook-hosts)",
                      host);
    const char *kind = webhook_host_kind(host);
    if (kind)
        return errmsg(err, errlen,
                      "url: host %s is a%s %s address: webhooks call no loopback, private, link-local, unspecified, "
                      "multicast or reserved address unless --webhook-hosts names the host",
                      host, strchr("aeiou", kind[0]) ? "n" : "", kind);
    return 0;
}

int webhook_url_check(const char *url, const char *allow_hosts, char *err, size_t errlen)
{
    return wh_url_check(url, allow_hosts, 1, NULL, err, errlen);
}

static int wh_events_parse(json_t *v, unsigned *bits, char *err, size_t errlen)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 16)
        return errmsg(err, errlen, "events: must be a list of 1 to 16 event names");
    *bits = 0;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *name = json_string_value(e);
        int k = 0;
        while (name && WEBHOOK_EVENTS[k] && strcmp(WEBHOOK_EVENTS[k], name) != 0) k++;
        if (!name || !WEBHOOK_EVENTS[k])
            return errmsg(err, errlen,
                          "events: %s%.60s%s is not an event (job.succeeded, job.failed, job.cancelled, "
                          "job.interrupted, experiment.succeeded, experiment.failed, experiment.cancelled)",
                          name ? "\"" : "", name ? name : "a non-string", name ? "\"" : "");
        *bits |= 1u << k;
    }
    return 0;
}

/* webhook_body_parse; with !check_host, wh_url_check's. */
static int wh_body_parse(const char *body, size_t len, const char *allow_hosts, int check_host, webhook_req_t *out,
                         char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return errmsg(err, errlen, "the body is not a JSON object");
    }
    int rc = -1;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) if (strcmp(key, "url") && strcmp(key, "events") && strcmp(key, "secret") &&
                                       strcmp(key, "job"))
    {
        errmsg(err, errlen, "%.40s: not a field of a webhook (url, events, secret, job)", key);
        goto out;
    }
    const char *url = json_string_value(json_object_get(o, "url"));
    const char *secret = json_string_value(json_object_get(o, "secret"));
    json_t *job = json_object_get(o, "job");
    if (!url) {
        errmsg(err, errlen, "url: missing or not a string");
        goto out;
    }
    if (wh_url_check(url, allow_hosts, check_host, NULL, err, errlen) != 0) goto out;
    if (wh_events_parse(json_object_get(o, "events"), &out->events, err, errlen) != 0) goto out;
    if (!secret || strlen(secret) < WEBHOOK_SECRET_MIN || strlen(secret) > WEBHOOK_SECRET_MAX) {
        errmsg(err, errlen, "secret: must be a string of %d to %d bytes", WEBHOOK_SECRET_MIN, WEBHOOK_SECRET_MAX);
        goto out;
    }
    if (job && (!json_is_string(job) || !job_id_valid(json_string_value(job)))) {
        errmsg(err, errlen, "job: must be a job id (j-N)");
        goto out;
    }
    snprintf(out->url, sizeof out->url, "%s", url);
    snprintf(out->secret, sizeof out->secret, "%s", secret);
    if (job) snprintf(out->job, sizeof out->job, "%s", json_string_value(job));
    rc = 0;
out:
    json_decref(o);
    return rc;
}

int webhook_body_parse(const char *body, size_t len, const char *allow_hosts, webhook_req_t *out, char *err,
                       size_t errlen)
{
    return wh_body_parse(body, len, allow_hosts, 1, out, err, errlen);
}

const char *webhook_event_of(const json_t *ev)
{
    const char *type = json_string_value(json_object_get(ev, "type"));
    const char *state = json_string_value(json_object_get(ev, "state"));
    if (!type) return NULL;
    if (strcmp(type, "interruption") == 0) return "job.interrupted";
    int exp = strcmp(type, "experiment") == 0;
    if (exp) {
        /* an experiment's end is its "finished" event (with the state it ended in) or its
         * "cancelled" one (which has no state); its trials' events (submitted, promoted,
         * stopped, exploited) end nothing */
        const char *action = json_string_value(json_object_get(ev, "action"));
        if (action && strcmp(action, "cancelled") == 0) return "experiment.cancelled";
        if (!action || strcmp(action, "finished") != 0) return NULL;
    }
    if (!state || (!exp && strcmp(type, "state") != 0)) return NULL;
    if (strcmp(state, "SUCCEEDED") == 0) return exp ? "experiment.succeeded" : "job.succeeded";
    if (strcmp(state, "FAILED") == 0) return exp ? "experiment.failed" : "job.failed";
    if (strcmp(state, "CANCELLED") == 0) return exp ? "experiment.cancelled" : "job.cancelled";
    return NULL;
}

/* ---- the subscriptions' file ------------------------------------------------------------------ */

static json_t *wh_events_json(unsigned bits)
{
    json_t *a = json_array();
    for (int k = 0; WEBHOOK_EVENTS[k]; k++)
        if (bits & (1u << k)) json_array_append_new(a, json_string(WEBHOOK_EVENTS[k]));
    return a;
}

/* One subscription as the file (with_secret) or the API (without) has it. */
static json_t *wh_hook_json(const wh_hook_t *h, int with_secret)
{
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:s, s:b, s:f}", "id", h->id, "url", h->req.url, "events",
                          wh_events_json(h->req.events), "job", h->req.job[0] ? json_string(h->req.job) : json_null(),
                          "owner", h->owner, "admin", h->admin, "created", h->created);
    if (o && with_secret) json_object_set_new(o, "secret", json_string(h->req.secret));
    if (o && with_secret && h->owner_since > 0) json_object_set_new(o, "owner_since", json_real(h->owner_since));
    return o;
}

/* Writes every subscription (under w->lock). 0, or -1 with err. */
static int wh_store_save(webhooks_t *w, char *err, size_t errlen)
{
    json_t *a = json_array();
    for (int i = 0; i < w->n; i++) json_array_append_new(a, wh_hook_json(&w->hooks[i], 1));
    json_t *o = json_pack("{s:o, s:I}", "webhooks", a, "next_id", (json_int_t)w->next_id);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text) return errmsg(err, errlen, "out of memory");
    int rc = fs_atomic_write_fixed(w->path, text, strlen(text), 0600);
    int e = errno;
    memset(text, 0, strlen(text)); /* the secrets */
    free(text);
    return rc == 0 ? 0 : errmsg(err, errlen, "%s: %s", w->path, strerror(e));
}

static int wh_store_load_one(webhooks_t *w, json_t *e, char *err, size_t errlen)
{
    wh_hook_t *h = &w->hooks[w->n];
    memset(h, 0, sizeof *h);
    json_t *copy = json_deep_copy(e);
    const char *id = json_string_value(json_object_get(e, "id"));
    const char *owner = json_string_value(json_object_get(e, "owner"));
    if (json_is_null(json_object_get(copy, "job"))) json_object_del(copy, "job");
    json_object_del(copy, "id");
    json_object_del(copy, "owner");
    json_object_del(copy, "owner_since");
    json_object_del(copy, "admin");
    json_object_del(copy, "created");
    char *body = copy ? json_dumps(copy, JSON_COMPACT) : NULL;
    json_decref(copy);
    /* the allow-list may have changed since: a subscription it no longer allows is kept
     * (and shown) but its deliveries fail with the reason (wh_start_due); one it allows
     * (a host the list names: 127.0.0.1, an internal receiver) must load, whatever the
     * default list would say of it */
    int rc = body ? wh_body_parse(body, strlen(body), NULL, 0, &h->req, err, errlen) : -1;
    free(body);
    if (rc != 0) return -1;
    if (!id || strlen(id) >= sizeof h->id || !owner || strlen(owner) > USER_OWNER_MAX)
        return errmsg(err, errlen, "no id or owner");
    snprintf(h->id, sizeof h->id, "%s", id);
    snprintf(h->owner, sizeof h->owner, "%s", owner);
    h->admin = json_is_true(json_object_get(e, "admin"));
    h->created = json_number_value(json_object_get(e, "created"));
    h->owner_since = json_number_value(json_object_get(e, "owner_since"));
    w->n++;
    return 0;
}

static int wh_store_load(webhooks_t *w, char *err, size_t errlen)
{
    struct stat st;
    if (stat(w->path, &st) != 0) return errno == ENOENT ? 0 : errmsg(err, errlen, "%s: %s", w->path, strerror(errno));
    if (st.st_size > 4 << 20) return errmsg(err, errlen, "%s: larger than 4 MiB", w->path);
    json_error_t je;
    json_t *o = json_load_file(w->path, JSON_REJECT_DUPLICATES, &je);
    json_t *a = json_object_get(o, "webhooks");
    if (!json_is_array(a)) {
        json_decref(o);
        return errmsg(err, errlen, "%s: not a webhooks file: %s", w->path, jsonbody_text(&je));
    }
    w->next_id = (long)json_integer_value(json_object_get(o, "next_id"));
    size_t i;
    json_t *e;
    char why[256];
    json_array_foreach(a, i, e)
    {
        if (w->n >= WEBHOOKS_MAX || wh_store_load_one(w, e, why, sizeof why) != 0) {
            json_decref(o);
            return errmsg(err, errlen, "%s: entry %zu: %s", w->path, i, w->n >= WEBHOOKS_MAX ? "too many" : why);
        }
    }
    json_decref(o);
    return 0;
}

/* ---- deliveries ----------------------------------------------------------------------------- */

/* What GET /api/v1/webhooks says of a failed attempt never tells one network failure from
 * another (refused, unreachable, timed out, not HTTP): a member's subscription would
 * otherwise map the hosts and ports the coordinator reaches. The log (the admin's) has
 * libcurl's own words. */
#define WH_ERR_ADDRESS \
    "the receiver's address is not one webhooks may call (only a host --webhook-hosts names may be internal)"
#define WH_ERR_RESOLVE "url: the host name did not resolve"
#define WH_ERR_NO_ANSWER "no HTTP answer from the receiver (it could not be reached, or did not answer within 10 s)"

/* One attempt's end, recorded on the delivery at slot of h (under w->lock): delivered, or
 * tried again later (1, 2, 4, 8, 16 s), or failed for good after WEBHOOK_ATTEMPTS or at
 * once when final (a refusal, which no retry changes). detail: the log's words, or NULL. */
static void wh_record(wh_hook_t *h, int slot, int rc, int status, const char *why, int final, const char *detail)
{
    wh_delivery_t *x = &h->dl[slot];
    x->attempts++;
    x->http_status = status;
    snprintf(x->error, sizeof x->error, "%s", rc == 0 ? "" : why);
    if (rc == 0 || final || x->attempts >= WEBHOOK_ATTEMPTS) {
        snprintf(x->status, sizeof x->status, "%s", rc == 0 ? "delivered" : "failed");
        free(x->body);
        x->body = NULL;
        if (rc != 0)
            clog_printf("webhook %s: %s of %s not delivered after %d attempt%s: %s%s%s%s", h->id, x->event, x->job,
                        x->attempts, x->attempts == 1 ? "" : "s", why, detail ? " (" : "", detail ? detail : "",
                        detail ? ")" : "");
    } else {
        x->next_at = clock_wall_s() + (double)(1 << (x->attempts - 1));
    }
}

#ifdef PACER_HAVE_CURL
/* One POST under way: what it needs until libcurl is done with it, and what to find again
 * afterwards (the hook may have been removed meanwhile: by id, never by index). */
typedef struct {
    CURL *k;
    struct curl_slist *hdr;
    char *body;
    char hid[24], did[32], event[32], job[COORD_ID_MAX];
    int slot;
    int check_addr; /* the host is not named by --webhook-hosts: public addresses only */
    int refused;    /* wh_open_socket refused an address */
    char refused_kind[16];
    char ebuf[CURL_ERROR_SIZE];
} wh_xfer_t;

static size_t wh_discard(char *p, size_t size, size_t n, void *u)
{
    (void)p, (void)u;
    return size * n;
}

/* libcurl's socket for each address it is about to connect to, after its own resolution
 * (and for every address it tries): one a webhook may not call gets no socket, so no
 * second resolution, no rebinding between a check and a connect, reaches it. */
static curl_socket_t wh_open_socket(void *u, curlsocktype purpose, struct curl_sockaddr *a)
{
    wh_xfer_t *x = u;
    /* not a connection of ours, or an IPv6 address shorter than one: nothing to read */
    int odd = purpose != CURLSOCKTYPE_IPCXN || (a->family == AF_INET6 && a->addrlen < sizeof(struct sockaddr_in6));
    const char *kind = odd ? "reserved" : x->check_addr ? webhook_addr_kind(&a->addr) : NULL;
    if (kind) {
        x->refused = 1;
        snprintf(x->refused_kind, sizeof x->refused_kind, "%s", kind);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static void wh_xfer_free(wh_xfer_t *x)
{
    if (!x) return;
    if (x->k) curl_easy_cleanup(x->k);
    curl_slist_free_all(x->hdr);
    free(x->body);
    free(x);
}

/* A POST of body to url signed with secret, ready for curl_easy_perform or a multi
 * handle; NULL when out of memory. */
static wh_xfer_t *wh_xfer_new(const char *url, const char *secret, const char *event, const char *did, const char *body,
                              int check_addr)
{
    wh_xfer_t *x = calloc(1, sizeof *x);
    if (!x || !(x->k = curl_easy_init()) || !(x->body = strdup(body))) {
        wh_xfer_free(x);
        return NULL;
    }
    snprintf(x->event, sizeof x->event, "%s", event);
    snprintf(x->did, sizeof x->did, "%s", did);
    x->check_addr = check_addr;
    char sig[SHA256_HEX_LEN + 1], h_sig[96], h_event[64], h_id[64];
    hmac_sha256_hex(secret, strlen(secret), x->body, strlen(x->body), sig);
    snprintf(h_sig, sizeof h_sig, "X-Pacer-Signature: sha256=%s", sig);
    snprintf(h_event, sizeof h_event, "X-Pacer-Event: %s", event);
    snprintf(h_id, sizeof h_id, "X-Pacer-Delivery: %s", did);
    const char *lines[] = {"Content-Type: application/json", h_sig, h_event, h_id};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        struct curl_slist *more = curl_slist_append(x->hdr, lines[i]);
        if (!more) {
            wh_xfer_free(x);
            return NULL;
        }
        x->hdr = more;
    }
    CURL *k = x->k;
    curl_easy_setopt(k, CURLOPT_URL, url);
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, x->hdr);
    curl_easy_setopt(k, CURLOPT_POSTFIELDS, x->body);
    curl_easy_setopt(k, CURLOPT_TIMEOUT, (long)WEBHOOK_TIMEOUT_S);
    curl_easy_setopt(k, CURLOPT_CONNECTTIMEOUT, (long)WEBHOOK_TIMEOUT_S);
    curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L); /* a redirect could lead off the allow-list */
    curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(k, CURLOPT_PROXY, ""); /* no proxy from the environment: it would connect for us, unchecked */
    curl_easy_setopt(k, CURLOPT_FRESH_CONNECT, 1L); /* each connection made (and checked) for its delivery */
    curl_easy_setopt(k, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(k, CURLOPT_OPENSOCKETFUNCTION, wh_open_socket);
    curl_easy_setopt(k, CURLOPT_OPENSOCKETDATA, x);
    curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, wh_discard);
    curl_easy_setopt(k, CURLOPT_ERRORBUFFER, x->ebuf);
    curl_easy_setopt(k, CURLOPT_PRIVATE, x);
    return x;
}

/* A finished POST's outcome: 0 on a 2xx, else -1 with why (what the API shows) and detail
 * (what the log adds). *final: a refusal no retry changes. */
static int wh_xfer_outcome(wh_xfer_t *x, CURLcode rc, int *status, int *final, char *why, size_t whylen, char *detail,
                           size_t dlen)
{
    long code = 0;
    curl_easy_getinfo(x->k, CURLINFO_RESPONSE_CODE, &code);
    *status = rc == CURLE_OK ? (int)code : 0;
    *final = 0;
    detail[0] = 0;
    if (x->refused && rc != CURLE_OK) {
        *final = 1;
        snprintf(detail, dlen, "a %s address", x->refused_kind);
        return errmsg(why, whylen, "%s", WH_ERR_ADDRESS);
    }
    if (rc == CURLE_COULDNT_RESOLVE_HOST) return errmsg(why, whylen, "%s", WH_ERR_RESOLVE);
    if (rc != CURLE_OK) {
        snprintf(detail, dlen, "%s", x->ebuf[0] ? x->ebuf : curl_easy_strerror(rc));
        return errmsg(why, whylen, "%s", WH_ERR_NO_ANSWER);
    }
    if (code < 200 || code > 299) return errmsg(why, whylen, "HTTP %ld", code);
    return 0;
}

int webhook_post_once(const char *url, const char *secret, const char *body, int check_addresses, int *status,
                      char *why, size_t whylen)
{
    *status = 0;
    wh_xfer_t *x = wh_xfer_new(url, secret, "job.succeeded", "d-0", body, check_addresses);
    if (!x) return errmsg(why, whylen, "out of memory");
    CURLcode rc = curl_easy_perform(x->k);
    char detail[CURL_ERROR_SIZE];
    int final, r = wh_xfer_outcome(x, rc, status, &final, why, whylen, detail, sizeof detail);
    wh_xfer_free(x);
    return r;
}

/* The transfers under way, at most one per subscription (so WEBHOOKS_MAX in all): a
 * receiver that never answers holds its own subscription's deliveries for up to
 * WEBHOOK_TIMEOUT_S an attempt, and nobody else's. */
typedef struct {
    CURLM *m;
    wh_xfer_t *x[WEBHOOKS_MAX];
    int n;
} wh_flight_t;

/* Starts the due delivery of each subscription that has none under way (under w->lock);
 * *wait_s: until the next one is due (at most 0.5 s). */
static void wh_start_due(webhooks_t *w, wh_flight_t *f, double *wait_s)
{
    double now = clock_wall_s(), at = now + 0.5;
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->n && !__atomic_load_n(&w->stop, __ATOMIC_RELAXED); i++) {
        wh_hook_t *h = &w->hooks[i];
        int slot = -1;
        for (int k = 0; k < WEBHOOK_DELIVERIES_KEPT; k++)
            if (h->dl[k].body && (slot < 0 || h->dl[k].next_at < h->dl[slot].next_at)) slot = k;
        if (h->busy || slot < 0) continue;
        wh_delivery_t *d = &h->dl[slot];
        if (d->next_at > now) {
            if (d->next_at < at) at = d->next_at;
            continue;
        }
        /* checked again at each POST: a subscription made under a wider --webhook-hosts
         * than this daemon's reaches no host this one refuses */
        char why[160];
        int named = 0;
        if (wh_url_check(h->req.url, w->allow, 1, &named, why, sizeof why) != 0) {
            wh_record(h, slot, -1, 0, why, 1, NULL);
            at = now; /* its next one, if due, on the next round */
            continue;
        }
        wh_xfer_t *x = f->n < WEBHOOKS_MAX ? wh_xfer_new(h->req.url, h->req.secret, d->event, d->id, d->body, !named)
                                           : NULL;
        if (!x || curl_multi_add_handle(f->m, x->k) != CURLM_OK) {
            wh_xfer_free(x);
            continue; /* out of memory: tried again on the next round */
        }
        snprintf(x->hid, sizeof x->hid, "%s", h->id);
        snprintf(x->job, sizeof x->job, "%s", d->job);
        x->slot = slot;
        h->busy = 1;
        f->x[f->n++] = x;
    }
    pthread_mutex_unlock(&w->lock);
    *wait_s = at > now ? at - now : 0;
}

/* Records each finished POST on its delivery, if its subscription is still there. */
static void wh_reap(webhooks_t *w, wh_flight_t *f)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(f->m, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL *k = msg->easy_handle;
        CURLcode rc = msg->data.result;
        wh_xfer_t *x = NULL;
        curl_easy_getinfo(k, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(f->m, k);
        char why[160], detail[CURL_ERROR_SIZE];
        int status, final, r = wh_xfer_outcome(x, rc, &status, &final, why, sizeof why, detail, sizeof detail);
        pthread_mutex_lock(&w->lock);
        for (int i = 0; i < w->n; i++) {
            wh_hook_t *h = &w->hooks[i];
            if (strcmp(h->id, x->hid) != 0) continue;
            h->busy = 0;
            if (strcmp(h->dl[x->slot].id, x->did) == 0 && h->dl[x->slot].body)
                wh_record(h, x->slot, r, status, why, final, detail[0] ? detail : NULL);
        }
        pthread_mutex_unlock(&w->lock);
        for (int j = 0; j < f->n; j++)
            if (f->x[j] == x) f->x[j] = f->x[--f->n];
        wh_xfer_free(x);
    }
}

static void *wh_deliver_thread(void *arg)
{
    webhooks_t *w = arg;
    wh_flight_t f = {.m = w->multi};
    while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
        double wait_s;
        wh_start_due(w, &f, &wait_s);
        int running = 0;
        curl_multi_perform(f.m, &running);
        wh_reap(w, &f);
        int ms = (int)(wait_s * 1000);
        curl_multi_poll(f.m, NULL, 0, ms < 1 ? 1 : ms > 500 ? 500 : ms, NULL); /* woken by a new event or the stop */
    }
    for (int j = 0; j < f.n; j++) { /* not an attempt: said, and left */
        clog_printf("webhook %s: %s of %s not delivered: the daemon stopped", f.x[j]->hid, f.x[j]->event, f.x[j]->job);
        curl_multi_remove_handle(f.m, f.x[j]->k);
        wh_xfer_free(f.x[j]);
    }
    return NULL;
}

static int wh_deliver_start(webhooks_t *w)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!(w->multi = curl_multi_init())) return -1;
    if (pthread_create(&w->deliverer, NULL, wh_deliver_thread, w) != 0) return -1;
    w->delivering = 1;
    return 0;
}

static void wh_deliver_wake(webhooks_t *w)
{
    if (w->multi) curl_multi_wakeup(w->multi);
}

static void wh_deliver_stop(webhooks_t *w)
{
    wh_deliver_wake(w);
    if (w->delivering) pthread_join(w->deliverer, NULL);
    if (w->multi) curl_multi_cleanup(w->multi);
    w->multi = NULL;
}
#else
int webhook_post_once(const char *url, const char *secret, const char *body, int check_addresses, int *status,
                      char *why, size_t whylen)
{
    (void)url, (void)secret, (void)body, (void)check_addresses;
    *status = 0;
    return errmsg(why, whylen, "this coordinator was built without libcurl");
}

/* Without libcurl nothing is called: each due delivery fails at once, saying why. */
static void *wh_deliver_thread(void *arg)
{
    webhooks_t *w = arg;
    while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&w->lock);
        for (int i = 0; i < w->n; i++)
            for (int k = 0; k < WEBHOOK_DELIVERIES_KEPT; k++)
                if (w->hooks[i].dl[k].body)
                    wh_record(&w->hooks[i], k, -1, 0, "this coordinator was built without libcurl", 1, NULL);
        pthread_mutex_unlock(&w->lock);
        clock_sleep_s(0.5);
    }
    return NULL;
}

static int wh_deliver_start(webhooks_t *w)
{
    if (pthread_create(&w->deliverer, NULL, wh_deliver_thread, w) != 0) return -1;
    w->delivering = 1;
    return 0;
}

static void wh_deliver_wake(webhooks_t *w) { (void)w; }

static void wh_deliver_stop(webhooks_t *w)
{
    if (w->delivering) pthread_join(w->deliverer, NULL);
}
#endif

/* ---- events to deliveries ----------------------------------------------------------------- */

static int wh_event_bit(const char *name)
{
    for (int k = 0; WEBHOOK_EVENTS[k]; k++)
        if (strcmp(WEBHOOK_EVENTS[k], name) == 0) return k;
    return -1;
}

/* A new pending delivery of ev to h (under w->lock); the oldest kept one gives way, and
 * when it was still pending (a receiver down while more than WEBHOOK_DELIVERIES_KEPT
 * events came) the log says which event will never be delivered. */
static void wh_enqueue(webhooks_t *w, wh_hook_t *h, const char *name, const char *subject, json_t *ev)
{
    wh_delivery_t *d = &h->dl[h->ndl % WEBHOOK_DELIVERIES_KEPT];
    if (d->body)
        clog_printf("webhook %s: %s of %s (%s) dropped undelivered after %d attempt%s: a subscription keeps its "
                    "last %d deliveries",
                    h->id, d->event, d->job, d->id, d->attempts, d->attempts == 1 ? "" : "s", WEBHOOK_DELIVERIES_KEPT);
    free(d->body);
    memset(d, 0, sizeof *d);
    snprintf(d->id, sizeof d->id, "d-%ld", ++w->next_delivery);
    snprintf(d->event, sizeof d->event, "%s", name);
    snprintf(d->job, sizeof d->job, "%s", subject);
    snprintf(d->status, sizeof d->status, "pending");
    d->time = d->next_at = clock_wall_s();
    json_t *body = json_pack("{s:s, s:s, s:s, s:f, s:O}", "event", name, "webhook", h->id, "delivery", d->id, "time",
                             d->time, "data", ev);
    d->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!d->body) snprintf(d->status, sizeof d->status, "failed");
    h->ndl++;
}

/* Whether a member's subscription (not an admin's) wants events of bit (under w->lock). */
static int wh_member_wants(const webhooks_t *w, int bit)
{
    for (int i = 0; i < w->n; i++)
        if (!w->hooks[i].admin && (w->hooks[i].req.events & (1u << bit))) return 1;
    return 0;
}

/* Removes the subscription at i (under w->lock); its POST under way, if any, ends unrecorded. */
static void wh_drop(webhooks_t *w, int i)
{
    wh_hook_t *h = &w->hooks[i];
    for (int k = 0; k < WEBHOOK_DELIVERIES_KEPT; k++) free(h->dl[k].body);
    memmove(h, h + 1, sizeof *h * (size_t)(w->n - i - 1));
    w->n--;
    memset(&w->hooks[w->n], 0, sizeof w->hooks[w->n]); /* the secret */
}

/* Whether the account that made a subscription is still the one of that name: 1, 0 when
 * it was removed (or replaced by a new account of the name), -1 when Redis cannot say. */
static int wh_owner_current(webhooks_t *w, const char *owner, double since)
{
    if (strcmp(owner, USER_ADMIN_NAME) == 0) return 1; /* the daemon's own token: no account */
    user_record_t r;
    int code = coord_user_get(w->c, owner, &r);
    if (code == COORD_ENOTFOUND) return 0;
    if (code != COORD_OK) return -1;
    return since <= 0 || r.created == since;
}

/* A subscription an event would go to, its owner's account to be checked outside the lock. */
typedef struct {
    char id[24];
    char owner[USER_OWNER_MAX + 1];
    double since;
    int verdict; /* wh_owner_current's */
} wh_cand_t;

/* The subscriptions that want ev, whose owner's account is still theirs, get a delivery;
 * one whose account is gone is removed (a new account of the name never inherits it). The
 * job's (or the experiment's) owner is read (outside the lock) only when a member's
 * subscription might want the event. */
static void wh_dispatch(webhooks_t *w, json_t *ev)
{
    const char *name = webhook_event_of(ev);
    int bit = name ? wh_event_bit(name) : -1;
    if (bit < 0) return;
    const char *job = json_string_value(json_object_get(ev, "job"));
    const char *subject = job ? job : json_string_value(json_object_get(ev, "experiment"));
    if (!subject) subject = json_string_value(json_object_get(ev, "id"));
    if (!subject) subject = "";
    char owner[USER_OWNER_MAX + 1] = "";
    const char *evowner = json_string_value(json_object_get(ev, "owner"));
    if (evowner) snprintf(owner, sizeof owner, "%s", evowner);
    pthread_mutex_lock(&w->lock);
    int want = wh_member_wants(w, bit);
    pthread_mutex_unlock(&w->lock);
    if (want && !owner[0]) {
        int exists = 0, code = job ? coord_job_owner(w->c, job, owner, sizeof owner, &exists)
                                   : coord_experiment_owner(w->c, subject, owner, sizeof owner, &exists);
        if (code != COORD_OK) owner[0] = 0;
    }
    wh_cand_t cand[WEBHOOKS_MAX];
    int nc = 0;
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->n; i++) {
        wh_hook_t *h = &w->hooks[i];
        if (!(h->req.events & (1u << bit))) continue;
        if (h->req.job[0] && strcmp(h->req.job, subject) != 0) continue;
        if (!h->admin && (!owner[0] || strcmp(owner, h->owner) != 0)) continue;
        snprintf(cand[nc].id, sizeof cand[nc].id, "%s", h->id);
        snprintf(cand[nc].owner, sizeof cand[nc].owner, "%s", h->owner);
        cand[nc++].since = h->owner_since;
    }
    pthread_mutex_unlock(&w->lock);
    for (int j = 0; j < nc; j++) {
        int k = 0; /* an owner asked already for this event */
        while (k < j && (strcmp(cand[k].owner, cand[j].owner) != 0 || cand[k].since != cand[j].since)) k++;
        cand[j].verdict = k < j ? cand[k].verdict : wh_owner_current(w, cand[j].owner, cand[j].since);
    }
    pthread_mutex_lock(&w->lock);
    int dropped = 0;
    for (int j = 0; j < nc; j++)
        for (int i = 0; i < w->n; i++) {
            if (strcmp(w->hooks[i].id, cand[j].id) != 0) continue;
            if (cand[j].verdict > 0) wh_enqueue(w, &w->hooks[i], name, subject, ev);
            else if (cand[j].verdict < 0)
                clog_printf("webhook %s: %s of %s not delivered: Redis did not say whether %s's account still exists",
                            cand[j].id, name, subject, cand[j].owner);
            else {
                clog_printf("webhook %s removed: its owner %s's account is gone (a later account of the name does "
                            "not inherit it); %s of %s not delivered",
                            cand[j].id, cand[j].owner, name, subject);
                wh_drop(w, i);
                dropped = 1;
            }
            break;
        }
    char err[256];
    if (dropped && wh_store_save(w, err, sizeof err) != 0) clog_printf("webhooks: %s", err);
    pthread_mutex_unlock(&w->lock);
}

void webhooks_user_removed(coordinator_t *c, const char *user)
{
    webhooks_t *w = c->webhooks;
    if (!w || !user) return;
    pthread_mutex_lock(&w->lock);
    int dropped = 0;
    for (int i = 0; i < w->n;) {
        if (strcmp(w->hooks[i].owner, user) != 0) {
            i++;
            continue;
        }
        clog_printf("webhook %s removed with its owner %s's account", w->hooks[i].id, user);
        wh_drop(w, i);
        dropped++;
    }
    char err[256];
    if (dropped && wh_store_save(w, err, sizeof err) != 0)
        clog_printf("webhooks: %s: the removed subscriptions stay in the file until it is written again", err);
    pthread_mutex_unlock(&w->lock);
}

/* Follows pacer:events and turns them into deliveries; the delivery thread makes them. */
static void *wh_events_thread(void *arg)
{
    webhooks_t *w = arg;
    coord_cursor_t cur;
    int open = 0;
    while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
        if (!open && !(open = coord_events_open(w->c, NULL, &cur) == COORD_OK)) {
            clock_sleep_s(1.0); /* Redis not there yet */
            continue;
        }
        json_t *list = NULL;
        if (coord_events_wait(w->c, &cur, 500, 100, &list) != COORD_OK) clock_sleep_s(0.5);
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) wh_dispatch(w, json_object_get(e, "event"));
        if (json_array_size(list)) wh_deliver_wake(w);
        json_decref(list);
    }
    return NULL;
}

webhooks_t *webhooks_start(coordinator_t *c, const char *state_dir, const char *allow_hosts, char *err, size_t errlen)
{
    webhooks_t *w = calloc(1, sizeof *w);
    if (!w) {
        errmsg(err, errlen, "out of memory");
        return NULL;
    }
    w->c = c;
    snprintf(w->path, sizeof w->path, "%s/webhooks.json", state_dir);
    snprintf(w->allow, sizeof w->allow, "%s", allow_hosts && *allow_hosts ? allow_hosts : WEBHOOK_HOSTS_DEFAULT);
    pthread_mutex_init(&w->lock, NULL);
    if (wh_store_load(w, err, errlen) != 0) {
        webhooks_stop(w);
        return NULL;
    }
    if (wh_deliver_start(w) != 0 || pthread_create(&w->thread, NULL, wh_events_thread, w) != 0) {
        errmsg(err, errlen, "cannot start the webhook threads");
        webhooks_stop(w);
        return NULL;
    }
    w->started = 1;
    if (w->n) clog_printf("webhooks: %d subscription%s from %s", w->n, w->n == 1 ? "" : "s", w->path);
    return w;
}

void webhooks_stop(webhooks_t *w)
{
    if (!w) return;
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELAXED);
    if (w->started) pthread_join(w->thread, NULL);
    wh_deliver_stop(w); /* the POSTs under way are abandoned, the log naming each */
    for (int i = 0; i < w->n; i++)
        for (int k = 0; k < WEBHOOK_DELIVERIES_KEPT; k++) free(w->hooks[i].dl[k].body);
    memset(w->hooks, 0, sizeof w->hooks); /* the secrets */
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* ---- the API ---------------------------------------------------------------------------------- */

static json_t *wh_deliveries_json(const wh_hook_t *h)
{
    json_t *a = json_array();
    for (int k = 0; k < WEBHOOK_DELIVERIES_KEPT && k < h->ndl; k++) {
        const wh_delivery_t *d = &h->dl[(h->ndl - 1 - k) % WEBHOOK_DELIVERIES_KEPT]; /* newest first */
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, s:o, s:f}", "id", d->id, "event", d->event,
                                           "subject", d->job, "status", d->status, "attempts", d->attempts,
                                           "http_status", d->http_status ? json_integer(d->http_status) : json_null(),
                                           "error", d->error[0] ? json_string(d->error) : json_null(), "time", d->time));
    }
    return a;
}

/* The caller's name as a subscription's owner: an anonymous admin (no token configured:
 * the local admin) is "admin"; an anonymous reader owns nothing (""). */
static const char *wh_who(const coord_caller_t *by)
{
    if (by && by->user) return by->user;
    return !by || by->role == USER_ADMIN ? USER_ADMIN_NAME : "";
}

/* The caller's account as a subscription records it (wh_hook_t's owner_since): 0 for the
 * daemon's own admin and an anonymous caller. COORD_OK, or COORD_EDENIED (the account is
 * gone) or COORD_EUNAVAIL with err. */
static int wh_caller_since(coordinator_t *c, const coord_caller_t *by, double *since, char *err, size_t errlen)
{
    *since = 0;
    if (!by || !by->user || strcmp(by->user, USER_ADMIN_NAME) == 0) return COORD_OK;
    user_record_t rec;
    int code = coord_user_get(c, by->user, &rec);
    if (code == COORD_ENOTFOUND) return errmsg(err, errlen, "user %s no longer exists", by->user), COORD_EDENIED;
    if (code != COORD_OK)
        return errmsg(err, errlen, "Redis did not answer whether user %s exists", by->user), COORD_EUNAVAIL;
    *since = rec.created;
    return COORD_OK;
}

/* Whether h is by's own: made by the caller's name and account (one made before the
 * account was recorded: by the name). */
static int wh_mine(const wh_hook_t *h, const coord_caller_t *by, double since)
{
    const char *who = wh_who(by);
    return who[0] && strcmp(h->owner, who) == 0 && (h->owner_since <= 0 || h->owner_since == since);
}

int coord_webhook_add(coordinator_t *c, const coord_caller_t *by, const char *body, size_t len, json_t **out, char *err,
                      size_t errlen)
{
    webhooks_t *w = c->webhooks;
    if (!w) return errmsg(err, errlen, "webhooks are served by the daemon only"), COORD_ESTATE;
#ifndef PACER_HAVE_CURL
    return errmsg(err, errlen, "this coordinator was built without libcurl: it cannot call webhooks"), COORD_ESTATE;
#endif
    webhook_req_t req;
    if (webhook_body_parse(body, len, w->allow, &req, err, errlen) != 0) return COORD_EINVAL;
    int admin = !by || by->role == USER_ADMIN;
    double since;
    int who = wh_caller_since(c, by, &since, err, errlen);
    if (who != COORD_OK) return who;
    if (req.job[0]) {
        char owner[USER_OWNER_MAX + 1] = "";
        int exists = 0, code = coord_job_owner(c, req.job, owner, sizeof owner, &exists);
        if (code != COORD_OK) return code;
        if (!exists) return errmsg(err, errlen, "job: no job %s", req.job), COORD_ENOTFOUND;
        if (!admin && strcmp(owner, wh_who(by)) != 0)
            return errmsg(err, errlen, "members may subscribe only to their own jobs: %s is %s's", req.job,
                          owner[0] ? owner : "nobody"),
                   COORD_EDENIED;
    }
    pthread_mutex_lock(&w->lock);
    int code = COORD_OK, mine = 0;
    for (int i = 0; i < w->n; i++) mine += !w->hooks[i].admin && strcmp(w->hooks[i].owner, wh_who(by)) == 0;
    if (!admin && mine >= WEBHOOKS_PER_MEMBER) {
        errmsg(err, errlen,
               "a member may hold at most %d webhooks (WEBHOOKS_PER_MEMBER) and %s holds %d: remove one first (DELETE "
               "/api/v1/webhooks/{id})",
               WEBHOOKS_PER_MEMBER, wh_who(by), mine);
        code = COORD_ELIMIT;
    } else if (w->n >= WEBHOOKS_MAX) {
        errmsg(err, errlen, "the coordinator holds %d webhooks, its most: remove one first", WEBHOOKS_MAX);
        code = COORD_ELIMIT;
    } else {
        wh_hook_t *h = &w->hooks[w->n];
        memset(h, 0, sizeof *h);
        h->req = req;
        snprintf(h->id, sizeof h->id, "w-%ld", ++w->next_id);
        snprintf(h->owner, sizeof h->owner, "%s", wh_who(by));
        h->owner_since = since;
        h->admin = admin;
        h->created = clock_wall_s();
        w->n++;
        if (wh_store_save(w, err, errlen) != 0) {
            w->n--;
            code = COORD_EINTERNAL;
        } else {
            *out = wh_hook_json(h, 0);
            clog_printf("webhook %s added by %s (%s)", h->id, h->owner, admin ? "every job" : "their jobs");
        }
    }
    pthread_mutex_unlock(&w->lock);
    memset(&req, 0, sizeof req);
    return code;
}

int coord_webhook_list(coordinator_t *c, const coord_caller_t *by, json_t **out, char *err, size_t errlen)
{
    webhooks_t *w = c->webhooks;
    if (!w) return errmsg(err, errlen, "webhooks are served by the daemon only"), COORD_ESTATE;
    int admin = !by || by->role == USER_ADMIN;
    double since = 0;
    int who = admin ? COORD_OK : wh_caller_since(c, by, &since, err, errlen);
    if (who != COORD_OK) return who;
    json_t *a = json_array();
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->n; i++) {
        const wh_hook_t *h = &w->hooks[i];
        if (!admin && !wh_mine(h, by, since)) continue;
        json_t *o = wh_hook_json(h, 0);
        json_object_set_new(o, "deliveries", wh_deliveries_json(h));
        json_array_append_new(a, o);
    }
    pthread_mutex_unlock(&w->lock);
    *out = json_pack("{s:o, s:s}", "webhooks", a, "allowed_hosts", w->allow);
    return *out ? COORD_OK : COORD_EINTERNAL;
}

int coord_webhook_remove(coordinator_t *c, const coord_caller_t *by, const char *id, char *err, size_t errlen)
{
    webhooks_t *w = c->webhooks;
    if (!w) return errmsg(err, errlen, "webhooks are served by the daemon only"), COORD_ESTATE;
    int admin = !by || by->role == USER_ADMIN, code = COORD_ENOTFOUND;
    double since = 0;
    int who = admin ? COORD_OK : wh_caller_since(c, by, &since, err, errlen);
    if (who != COORD_OK) return who;
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->n; i++) {
        wh_hook_t *h = &w->hooks[i];
        if (strcmp(h->id, id) != 0) continue;
        if (!admin && !wh_mine(h, by, since)) {
            errmsg(err, errlen, "members may remove only their own webhooks: %s is %s's", id, h->owner);
            code = COORD_EDENIED;
            break;
        }
        wh_hook_t gone = *h;
        for (int k = 0; k < WEBHOOK_DELIVERIES_KEPT; k++) free(h->dl[k].body);
        memmove(h, h + 1, sizeof *h * (size_t)(w->n - i - 1));
        w->n--;
        code = COORD_OK;
        if (wh_store_save(w, err, errlen) != 0) { /* put back: the file still has it */
            memmove(h + 1, h, sizeof *h * (size_t)(w->n - i));
            for (int k = 0; k < WEBHOOK_DELIVERIES_KEPT; k++) gone.dl[k].body = NULL;
            *h = gone;
            w->n++;
            code = COORD_EINTERNAL;
        } else clog_printf("webhook %s removed by %s", id, wh_who(by));
        memset(&gone, 0, sizeof gone);
        break;
    }
    pthread_mutex_unlock(&w->lock);
    if (code == COORD_ENOTFOUND) errmsg(err, errlen, "no webhook %s", id);
    return code;
}
