# The Docker deployment's files are valid without a Docker engine:
#   - deploy/docker-compose.yml passes `docker-compose config -q` (Debian's docker-compose,
#     `deploy` group of deploy/install-deps.sh), with the sample env file, and with the gpu
#     profile; without a token it is refused, naming PACER_TOKEN;
#   - the services, volumes and wiring the README promises are there (from the resolved
#     config, not from grepping the YAML);
#   - deploy/Dockerfile passes deploy/lint-dockerfile.sh, and the linter does catch a
#     Dockerfile that breaks its rules (so a linter that silently passes everything fails);
#   - the entrypoint and the namespace scripts parse (sh -n);
#   - the Dockerfile's build stage copies every file its make goals need (make -n);
#   - make demo's slowdowns are scaled to the cores, the relative speeds kept.
# Skips (77) when docker-compose is not installed: `sh deploy/install-deps.sh deploy`.
. tests/lib.sh
for s in deploy/entrypoint-pacer.sh deploy/lint-dockerfile.sh deploy/netns/*.sh; do
    sh -n "$s" || fail "$s does not parse"
done
echo "ok: deploy scripts parse"

sh deploy/lint-dockerfile.sh deploy/Dockerfile || fail "deploy/Dockerfile does not pass the lint"
cat >"$TMP/bad.Dockerfile" <<'DOCKERFILE'
FROM debian:latest
RUN apt-get update && apt-get install -y curl
CMD ["sh"]
DOCKERFILE
sh deploy/lint-dockerfile.sh "$TMP/bad.Dockerfile" >"$TMP/lint.out" 2>&1 && fail "the lint passed a bad Dockerfile"
for rule in pinned-base no-recommends apt-lists user healthcheck; do
    grep -q ": $rule:" "$TMP/lint.out" || { cat "$TMP/lint.out"; fail "the lint missed rule $rule"; }
done
echo "ok: the Dockerfile lint passes deploy/Dockerfile and catches a bad one"

# make demo's slowdowns, scaled to the cores (deploy/fit-slowdowns.jq, issue 29): the
# relative speeds kept, the workers' demand (sum of 1 / slowdown) at most half the cores,
# and the smallest such factor (a power of two): [4, 4, 8, 16] on 2 cores, as the
# benchmarks' default, unchanged from 6 cores; a bad DEMO_CORES is refused.
command -v jq >/dev/null || fail "jq not installed (make deps)"
sh -n deploy/demo.sh || fail "deploy/demo.sh does not parse"
for cores in 1 2 3 4 5 6 16; do
    got=$(DEMO_CORES=$cores sh deploy/demo.sh --print-spec | jq -c .emulate.slowdown) || fail "demo --print-spec failed on $cores cores"
    jq -e -n --argjson s "$got" --argjson c "$cores" '($s | map(1 / .) | add) as $d
        | ($s | map(. / $s[0])) == [1, 1, 2, 4] and $d <= $c / 2 and ($s[0] == 1 or $d * 2 > $c / 2)' >/dev/null ||
        fail "on $cores cores the demo's slowdowns are $got: not [1, 1, 2, 4] scaled by the least factor that fits half the cores"
done
[ "$(DEMO_CORES=2 sh deploy/demo.sh --print-spec | jq -c .emulate.slowdown)" = "[4,4,8,16]" ] || fail "the demo's slowdowns on 2 cores are not [4, 4, 8, 16]"
[ "$(DEMO_CORES=6 sh deploy/demo.sh --print-spec | jq -c .emulate.slowdown)" = "[1,1,2,4]" ] || fail "the demo's slowdowns on 6 cores are not [1, 1, 2, 4]"
DEMO_CORES=0 sh deploy/demo.sh --print-spec >/dev/null 2>"$TMP/demo.err" && fail "DEMO_CORES=0 was accepted"
grep -q "DEMO_CORES" "$TMP/demo.err" || fail "a bad DEMO_CORES was refused without naming it"
echo "ok: make demo's slowdowns fit the cores (1 to 16), relative speeds kept"

command -v docker-compose >/dev/null 2>&1 || skip "docker-compose not installed (sh deploy/install-deps.sh deploy); the compose file was not validated"
compose() { docker-compose -f deploy/docker-compose.yml --env-file "$TMP/env" "$@"; }
cp deploy/.env.example "$TMP/env"
compose config -q || fail "docker-compose config rejects deploy/docker-compose.yml"
compose --profile gpu config -q || fail "docker-compose config rejects the gpu profile"
echo "ok: docker-compose $(docker-compose version --short 2>/dev/null) accepts the file (default and gpu profile)"

grep -v '^PACER_TOKEN=' deploy/.env.example >"$TMP/env"
compose config -q >"$TMP/notoken" 2>&1 && fail "config accepted a deployment without PACER_TOKEN"
grep -q PACER_TOKEN "$TMP/notoken" || { cat "$TMP/notoken"; fail "the error does not name PACER_TOKEN"; }
echo "ok: no token, no deployment (the error names PACER_TOKEN)"

# The resolved configuration as JSON (docker-compose prints YAML; python3-yaml comes with
# docker-compose).
cp deploy/.env.example "$TMP/env"
compose --profile gpu config >"$TMP/config.yml" || fail "config"
python3 -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)' "$TMP/config.yml" >"$TMP/c.json" ||
    fail "cannot read the resolved config"
q() { jq -r "$1" "$TMP/c.json"; }
[ "$(q '.services | keys | join(" ")')" = "coordinator gpu-worker1 gpu-worker2 redis worker1 worker2" ] ||
    fail "services: $(q '.services | keys | join(" ")')"
[ "$(q '.services.redis.healthcheck.test | join(" ")')" = "CMD redis-cli ping" ] || fail "redis healthcheck"
q '.services.redis.command | join(" ")' | grep -q -- '--appendonly yes' || fail "redis without appendonly"
[ "$(q '.services.coordinator.depends_on.redis.condition')" = service_healthy ] || fail "coordinator does not wait for a healthy redis"
[ "$(q '.services.coordinator.environment.REDIS_URL')" = "redis://redis:6379" ] || fail "REDIS_URL"
[ "$(q '.services.coordinator.environment.PACER_TOKEN')" != "" ] || fail "PACER_TOKEN not passed"
q '.services.coordinator.healthcheck.test | join(" ")' | grep -q '/healthz' || fail "coordinator healthcheck"
[ "$(q '.services.coordinator.ports[0].target')" = 8080 ] || fail "port 8080 not published"
for s in coordinator worker1 worker2 gpu-worker1; do
    q ".services[\"$s\"].volumes[]" | grep -q '^pacer-state:/var/lib/pacer' || fail "$s lacks the shared state dir at /var/lib/pacer"
done
for s in worker1 worker2; do
    [ "$(q ".services.$s.command[0]")" = worker ] || fail "$s does not run the worker role"
    q ".services.$s.volumes[]" | grep -q '^pacer-ssh-workers:/etc/pacer/ssh-workers:ro$' || fail "$s: public ssh volume not read-only"
    q ".services.$s.volumes[]" | grep -q 'ssh-key' && fail "$s mounts the private key volume"
done
[ "$(q '.services["gpu-worker1"].profiles[0]')" = gpu ] || fail "gpu workers not in the gpu profile"
[ "$(q '.services["gpu-worker1"].deploy.resources.reservations.devices[0] | "\(.driver) \(.capabilities[0])"')" = "nvidia gpu" ] ||
    fail "gpu workers do not reserve an nvidia GPU"
for h in $(q '.services.coordinator.environment.PACER_HOSTS'); do
    [ "$(q ".services[\"${h%%:*}\"] | type")" = object ] || fail "hostfile host $h is not a service"
done
echo "ok: redis (appendonly, healthcheck), coordinator (token, healthz, port 8080, waits for redis), workers (sshd, shared state, read-only public key), gpu profile"

# The build stage's COPY set is enough for its make goals: copy exactly what the stage
# copies into an empty directory and ask make what it would do (make -n parses every
# included fragment and resolves every source, without compiling). An include such as
# fuzz/fuzz.mk that the stage forgot used to break `docker build` without any test noticing.
ctx=$TMP/docker-context
mkdir -p "$ctx"
awk '/^FROM .* AS build/ { b = 1; next } /^FROM / { b = 0 } b && /^COPY / && !/--from/ { print $2, $3 }' deploy/Dockerfile >"$TMP/copies"
[ -s "$TMP/copies" ] || fail "no COPY found in the Dockerfile's build stage"
while read -r src dst; do
    mkdir -p "$ctx/$dst"
    # shellcheck disable=SC2086 # $src may be a glob (deploy/*.mk), as in the Dockerfile
    for f in $src; do
        [ -e "$f" ] || fail "Dockerfile COPY $src: no such file"
        case $dst in */ | ./) cp -r "$f" "$ctx/$dst" ;; *) rm -rf "${ctx:?}/$dst"; cp -r "$f" "$ctx/$dst" ;; esac
    done
done <"$TMP/copies"
goals=$(sed -n 's/^ARG PACER_MAKE_GOALS="\(.*\)"$/\1/p' deploy/Dockerfile)
[ -n "$goals" ] || fail "no PACER_MAKE_GOALS in the Dockerfile"
# shellcheck disable=SC2086
make -C "$ctx" -n WITH_CUDA=no $goals static >"$TMP/make-n.log" 2>&1 ||
    { tail -5 "$TMP/make-n.log"; fail "the Dockerfile's build stage cannot make $goals from what it copies"; }
echo "ok: the Dockerfile's build stage copies everything make needs for: $goals static"
