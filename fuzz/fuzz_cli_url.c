/* fuzz/fuzz_cli_url.c - libFuzzer target for the clients' clear-text token rule (issue
 * 45): cli_token_transport_ok decides from a URL's text whether `pacer` may send a token
 * over it. Build and run: make fuzz-cli_url.
 *
 * Input: the URL (bytes up to the first NUL). Properties beyond no crash / UB:
 *  - no token, or allowed, or https:// (any case): always 0; a refusal's message is
 *    non-empty, ends inside the buffer (also a tiny one) and names the rule;
 *  - differential against the coordinator's own loopback rule (http/auth.c): for
 *    "http://" + the input (cut at its first of / ? # @ : [ ]) + ":8080/x", the token is
 *    allowed exactly when auth_host_is_loopback says the host is loopback.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../cli/cliargs.h"
#include "auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2048) return 0;
    char url[2049], err[512], small[4];
    memcpy(url, data, size);
    url[size] = 0;
    if (cli_token_transport_ok(url, NULL, 0, err, sizeof err) != 0) abort();
    if (cli_token_transport_ok(url, "t", 1, err, sizeof err) != 0) abort();
    err[0] = 0;
    if (cli_token_transport_ok(url, "t", 0, err, sizeof err) != 0) {
        if (strncasecmp(url, "https://", 8) == 0) abort();
        if (!memchr(err, 0, sizeof err) || !strstr(err, "refusing to send the API token")) abort();
        memset(small, 'x', sizeof small);
        if (cli_token_transport_ok(url, "t", 0, small, sizeof small) == 0 || !memchr(small, 0, sizeof small)) abort();
    }

    char host[2049], built[2100];
    size_t n = strcspn(url, "/?#@:[]");
    memcpy(host, url, n);
    host[n] = 0;
    snprintf(built, sizeof built, "http://%s:8080/x", host);
    int ok = cli_token_transport_ok(built, "t", 0, err, sizeof err) == 0;
    if (ok != (n > 0 && auth_host_is_loopback(host))) abort();
    return 0;
}
