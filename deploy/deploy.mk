# deploy/deploy.mk - deployment targets; the top-level Makefile includes it after its own
# rules (it uses BUILD from there) with
#
#   include deploy/deploy.mk
#
#   make test-multihost   the multi-host test on network namespaces (root; ~25 s):
#                         Redis + coordinator + 3 worker hosts, jobs over HTTP, a slow link
#   make test-slurm       the slurm launcher against a real Slurm (root; ~40 s): slurmctld +
#                         2 slurmd + munged on network namespaces (deploy/slurm), jobs over HTTP
#   make test-elastic     elastic restart on network namespaces (root; ~2.5 min): a 3-host
#                         job loses a host, shrinks to 2 and SUCCEEDS (tests/integration/elastic.sh)
#   make test-deploy      the Docker files without an engine: docker-compose config -q
#                         (installs Debian's docker-compose), the Dockerfile lint
#   make lint-dockerfile  deploy/lint-dockerfile.sh on deploy/Dockerfile
#   make image            docker build of the CPU image (needs a Docker engine)
#   make image-gpu        the CUDA image: GPU_BUILD_BASE / GPU_BASE pick the pair

GPU_BUILD_BASE ?= nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04
GPU_BASE       ?= nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04

.PHONY: test-multihost test-slurm test-elastic test-deploy lint-dockerfile image image-gpu

test-multihost: $(BUILD)/pacer-coordinator $(BUILD)/pacer-worker
	@sh deploy/install-deps.sh test
	@BUILD=$(BUILD) OPENBLAS_NUM_THREADS=1 sh tests/integration/multihost.sh

test-slurm: $(BUILD)/pacer-coordinator $(BUILD)/pacer-worker
	@sh deploy/install-deps.sh test
	@BUILD=$(BUILD) OPENBLAS_NUM_THREADS=1 sh tests/integration/slurm.sh

test-elastic: $(BUILD)/pacer-coordinator $(BUILD)/pacer-worker
	@sh deploy/install-deps.sh test
	@BUILD=$(BUILD) OPENBLAS_NUM_THREADS=1 sh tests/integration/elastic.sh

test-deploy:
	@sh deploy/install-deps.sh deploy
	@sh tests/integration/deploy_config.sh

lint-dockerfile:
	@sh deploy/lint-dockerfile.sh deploy/Dockerfile

image:
	docker build -f deploy/Dockerfile -t pacer:cpu .

image-gpu:
	docker build -f deploy/Dockerfile -t pacer:gpu \
	    --build-arg BUILD_BASE=$(GPU_BUILD_BASE) --build-arg BASE=$(GPU_BASE) .
