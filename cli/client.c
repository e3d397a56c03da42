/* cli/client.c - see client.h. */
#include "client.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "version.h"

#define CONNECT_TIMEOUT_S 10L
#define CALL_TIMEOUT_S 120L
#define SILENT_S 45L /* the server sends a keep-alive comment every 15 s */

struct client {
    CURL *curl;
    char base[CLI_URL_MAX];
    char auth[CLI_TOKEN_MAX + 32];
    char cacert[PATH_MAX]; /* "" = the system's CAs */
    char errbuf[CURL_ERROR_SIZE];
};

/* What the callbacks of one transfer share. */
typedef struct {
    client_t *c;
    client_resp_t *r;
    int overflow; /* the body went over CLIENT_BODY_MAX */
    FILE *out;    /* download: 2xx bodies go here */
    size_t *written;
    int out_failed;
    sse_parser_t *parser; /* stream: 200 bodies go here */
    int typed;            /* ... only those of type text/event-stream (a POST stream) */
    int stop;             /* the parser's or tick's positive value */
    int bad_stream;       /* the parser refused the stream (an event over SSE_EVENT_MAX) */
    client_tick_fn tick;
    void *ctx;
    double last_tick;
} xfer_t;

client_t *client_new(const char *base_url, const char *token, char *err, size_t errlen)
{
    if (cli_url_valid(base_url, err, errlen) != 0) return NULL;
    if (token && (strlen(token) >= CLI_TOKEN_MAX || strpbrk(token, "\r\n"))) {
        snprintf(err, errlen, "the token is longer than %d bytes or holds a line break", CLI_TOKEN_MAX - 1);
        return NULL;
    }
    client_t *c = calloc(1, sizeof *c);
    if (!c || !(c->curl = curl_easy_init())) {
        snprintf(err, errlen, "cannot start libcurl");
        free(c);
        return NULL;
    }
    snprintf(c->base, sizeof c->base, "%s", base_url);
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/') c->base[--n] = 0;
    if (token && *token) snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", token);
    return c;
}

int client_set_cacert(client_t *c, const char *path, char *err, size_t errlen)
{
    /* opened here so that a wrong path is named, not libcurl's "error setting certificate file" */
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f || strlen(path) >= sizeof c->cacert) {
        snprintf(err, errlen, "--cacert %s: %s", path ? path : "", f ? "path too long" : strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    fclose(f);
    snprintf(c->cacert, sizeof c->cacert, "%s", path);
    return 0;
}

void client_free(client_t *c)
{
    if (!c) return;
    curl_easy_cleanup(c->curl);
    memset(c->auth, 0, sizeof c->auth);
    free(c);
}

const char *client_url(const client_t *c) { return c->base; }

void client_resp_free(client_resp_t *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

int client_job_path(char *out, size_t len, const char *id, const char *suffix)
{
    return client_item_path(out, len, "/api/v1/jobs/", id, suffix);
}

int client_item_path(char *out, size_t len, const char *collection, const char *id, const char *suffix)
{
    static const char HEX[] = "0123456789ABCDEF";
    int n = snprintf(out, len, "%s", collection);
    if (n < 0 || (size_t)n >= len) return -1;
    size_t o = (size_t)n;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                    *p == '_' || *p == '.' || *p == '~';
        if (o + 4 >= len) return -1;
        if (plain) out[o++] = (char)*p;
        else {
            out[o++] = '%';
            out[o++] = HEX[*p >> 4];
            out[o++] = HEX[*p & 15];
        }
    }
    int k = snprintf(out + o, len - o, "%s", suffix ? suffix : "");
    return k < 0 || (size_t)k >= len - o ? -1 : 0;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- callbacks ---------------------------------------------------------------------------- */

static int keep(xfer_t *x, const char *data, size_t n)
{
    client_resp_t *r = x->r;
    if (r->len + n > CLIENT_BODY_MAX) {
        x->overflow = 1;
        return -1;
    }
    char *b = realloc(r->body, r->len + n + 1);
    if (!b) return -1;
    memcpy(b + r->len, data, n);
    r->body = b;
    r->len += n;
    r->body[r->len] = 0;
    return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    xfer_t *x = arg;
    size_t n = size * nmemb;
    if (!x->r->status) curl_easy_getinfo(x->c->curl, CURLINFO_RESPONSE_CODE, &x->r->status);
    long st = x->r->status;
    if (x->out && st >= 200 && st < 300) {
        if (fwrite(data, 1, n, x->out) != n) {
            x->out_failed = 1;
            return 0;
        }
        *x->written += n;
        return n;
    }
    if (x->parser && st == 200 && (!x->typed || strncasecmp(x->r->content_type, "text/event-stream", 17) == 0)) {
        int rc = sse_feed(x->parser, data, n);
        if (rc) {
            if (rc > 0) x->stop = rc;
            else x->bad_stream = 1;
            return 0; /* aborts the transfer (CURLE_WRITE_ERROR) */
        }
        return n;
    }
    return keep(x, data, n) == 0 ? n : 0;
}

/* Keeps Content-Type and Location; a new status line (a 100 Continue before the answer)
 * starts over. */
static size_t on_header(char *line, size_t size, size_t nitems, void *arg)
{
    xfer_t *x = arg;
    size_t n = size * nitems;
    char h[512];
    size_t k = n < sizeof h - 1 ? n : sizeof h - 1;
    memcpy(h, line, k);
    h[k] = 0;
    h[strcspn(h, "\r\n")] = 0;
    if (strncmp(h, "HTTP/", 5) == 0) {
        x->r->content_type[0] = x->r->location[0] = 0;
        x->r->status = 0;
    } else if (strncasecmp(h, "content-type:", 13) == 0) {
        snprintf(x->r->content_type, sizeof x->r->content_type, "%s", h + 13 + strspn(h + 13, " \t"));
    } else if (strncasecmp(h, "location:", 9) == 0) {
        snprintf(x->r->location, sizeof x->r->location, "%s", h + 9 + strspn(h + 9, " \t"));
    }
    return n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    xfer_t *x = arg;
    if (!x->tick) return 0;
    double now = mono();
    if (now - x->last_tick < 0.25) return 0;
    x->last_tick = now;
    int rc = x->tick(x->ctx);
    if (rc > 0) x->stop = rc;
    return rc > 0 ? 1 : 0;
}

/* ---- transfers ------------------------------------------------------------------------------ */

/* Runs one transfer; 0 when an answer came, -1 with err otherwise (x->stop set: stopped
 * on purpose, not an error). */
static int perform(client_t *c, const char *method, const char *path, const char *body, size_t body_len,
                   struct curl_slist *extra, xfer_t *x, long timeout_s, char *err, size_t errlen)
{
    char url[CLI_URL_MAX + 2048];
    if (snprintf(url, sizeof url, "%s%s", c->base, path) >= (int)sizeof url) {
        snprintf(err, errlen, "request path too long");
        return -1;
    }
    CURL *h = c->curl;
    curl_easy_reset(h);
    struct curl_slist *hdrs = extra;
    if (c->auth[0]) hdrs = curl_slist_append(hdrs, c->auth);
    /* a model upload's body is a file's bytes (an ONNX model); any other body a JSON
     * document (a user's PUT /api/v1/users/{name} included) */
    const int put = strcmp(method, "PUT") == 0, bytes = put && strncmp(path, "/api/v1/models/", 15) == 0;
    if (body)
        hdrs = curl_slist_append(hdrs,
                                 bytes ? "Content-Type: application/octet-stream" : "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip for specs */
    c->errbuf[0] = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "pacer/" PACER_VERSION);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    if (c->cacert[0]) curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
    if (timeout_s > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
    else {
        /* Streams and downloads: no overall limit, but a connection that carries nothing
         * (not even a keep-alive) for SILENT_S is dead. */
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, SILENT_S);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    if (x->tick) {
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
    } else if (put) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    if (!x->r->status) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->r->status);
    if (rc == CURLE_OK) return 0;
    if (x->stop) return -1;
    if (x->overflow) snprintf(err, errlen, "the answer of %s is larger than %u bytes", url, CLIENT_BODY_MAX);
    else if (x->bad_stream)
        snprintf(err, errlen, "the event stream of %s carried an event larger than %u bytes", url, SSE_EVENT_MAX);
    else if (x->out_failed) snprintf(err, errlen, "writing the answer of %s failed", url);
    else if (x->r->status)
        snprintf(err, errlen, "the connection to the coordinator at %s broke: %s", c->base,
                 c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
    else if (rc == CURLE_PEER_FAILED_VERIFICATION)
        snprintf(err, errlen, "cannot verify the coordinator at %s: %s (%s)", c->base,
                 c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc),
                 c->cacert[0] ? "its certificate is not signed by the CA in --cacert, or names another host"
                              : "give its CA with --cacert FILE or PACER_CACERT");
    else
        snprintf(err, errlen, "cannot reach the coordinator at %s: %s", c->base,
                 c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
    return -1;
}

int client_call(client_t *c, const char *method, const char *path, const char *body, size_t body_len, client_resp_t *r,
                char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    xfer_t x = {.c = c, .r = r};
    int rc = perform(c, method, path, body, body_len, NULL, &x, CALL_TIMEOUT_S, err, errlen);
    if (rc != 0) client_resp_free(r);
    return rc;
}

int client_download(client_t *c, const char *path, FILE *out, size_t *written, client_resp_t *r, char *err,
                    size_t errlen)
{
    memset(r, 0, sizeof *r);
    *written = 0;
    xfer_t x = {.c = c, .r = r, .out = out, .written = written};
    int rc = perform(c, "GET", path, NULL, 0, NULL, &x, 0, err, errlen);
    if (rc != 0) client_resp_free(r);
    return rc;
}

/* After a stream: an answer cut in the middle of an event is a dropped connection. */
static int stream_end(client_t *c, const xfer_t *x, const sse_parser_t *parser, int rc, char *err, size_t errlen)
{
    if (x->stop) return x->stop;
    if (rc == 0 && x->overflow == 0 && x->r->status == 200 && parser->line_len + parser->data_len > 0) {
        snprintf(err, errlen, "the event stream from %s ended in the middle of an event", c->base);
        return -1;
    }
    return rc;
}

int client_post_stream(client_t *c, const char *path, const char *body, size_t body_len, sse_parser_t *parser,
                       client_resp_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    xfer_t x = {.c = c, .r = r, .parser = parser, .typed = 1, .last_tick = mono()};
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: text/event-stream, application/json;q=0.5");
    int rc = perform(c, "POST", path, body, body_len, hdrs, &x, 0, err, errlen);
    return stream_end(c, &x, parser, rc, err, errlen);
}

int client_stream(client_t *c, const char *path, const char *last_event_id, sse_parser_t *parser, client_tick_fn tick,
                  void *ctx, client_resp_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    xfer_t x = {.c = c, .r = r, .parser = parser, .tick = tick, .ctx = ctx, .last_tick = mono()};
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: text/event-stream");
    if (last_event_id && *last_event_id && strlen(last_event_id) < SSE_ID_MAX && !strpbrk(last_event_id, "\r\n")) {
        char h[SSE_ID_MAX + 32];
        snprintf(h, sizeof h, "Last-Event-ID: %s", last_event_id);
        hdrs = curl_slist_append(hdrs, h);
    }
    int rc = perform(c, "GET", path, NULL, 0, hdrs, &x, 0, err, errlen);
    return stream_end(c, &x, parser, rc, err, errlen);
}
