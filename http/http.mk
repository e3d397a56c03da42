# http/http.mk - the REST API's extra targets; the top-level Makefile includes it with
#
#   include http/http.mk
#
# after its own rules (it uses BUILD from there; the fuzz target has its own compiler,
# flags and include path: the HTTP layer, the coordinator and common/).
#
#   make static        build/static/: the dashboard (static/*), uPlot from npm
#                      (static/package.json, pinned in static/package-lock.json) and
#                      docs/openapi.json; part of `make all`
#   (make fuzz, with fuzz/fuzz_request.c among its harnesses, is in fuzz/fuzz.mk)
#   make bench-http    wrk and SSE benchmarks of the API (bench/http_wrk.sh)

STATIC_SRC  := $(wildcard static/*.html static/*.css static/*.js)
STATIC_OUT  := $(patsubst static/%,$(BUILD)/static/%,$(STATIC_SRC))
UPLOT_DIST  := static/node_modules/uplot/dist
UPLOT_STAMP := $(BUILD)/static/vendor/.uplot

.PHONY: static bench-http
test-bins: static

static: $(STATIC_OUT) $(UPLOT_STAMP) $(BUILD)/static/openapi.json

$(BUILD)/static/%: static/%
	@mkdir -p $(dir $@)
	cp $< $@

$(BUILD)/static/openapi.json: docs/openapi.json
	@mkdir -p $(dir $@)
	cp $< $@

# uPlot: `npm ci` installs exactly the locked version into static/node_modules (git-ignored);
# its two dist files are copied next to the dashboard. Without npm (or the registry) the
# build goes on and the dashboard shows no charts.
$(UPLOT_STAMP): static/package.json static/package-lock.json
	@mkdir -p $(dir $@)
	@if [ ! -f $(UPLOT_DIST)/uPlot.iife.min.js ] || [ static/package-lock.json -nt static/node_modules/.package-lock.json ]; then \
	    if command -v npm >/dev/null 2>&1; then \
	        echo "static: npm ci (uPlot)"; (cd static && npm ci --no-audit --no-fund --loglevel=error) || true; \
	    else echo "static: npm not found (make deps installs nodejs): the dashboard will have no charts"; fi; \
	fi
	@if [ -f $(UPLOT_DIST)/uPlot.iife.min.js ]; then \
	    cp $(UPLOT_DIST)/uPlot.iife.min.js $(UPLOT_DIST)/uPlot.min.css $(dir $@) && touch $@; \
	else echo "static: uPlot not installed: the dashboard will have no charts"; fi

bench-http:
	@sh bench/http_wrk.sh
