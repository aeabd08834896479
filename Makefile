# mtc — plain GNU make. Every lib/*.c and lib/*/*.c (a subsystem's folder) goes into
# libmtc.a, every cmd/*.c is a program and cmd/<program>/*.c are its other parts,
# cmd/common/*.c (the command line every program shares) goes into each program, every
# tests/unit/*.c is a unit-test binary; adding a file needs no edit here.

PREFIX   ?= /usr/local
CC       ?= cc
PKGS      = yaml-0.1 libcurl libarchive popt jansson libmicrohttpd libssl libcrypto libzstd
DEBS      = build-essential pkg-config libyaml-dev libcurl4-openssl-dev libarchive-dev \
            libpopt-dev libjansson-dev libmicrohttpd-dev libssl-dev libzstd-dev \
            bats bats-support bats-assert bats-file b3sum rclone python3 \
            python3-yaml inotify-tools jq clang libclang-rt-14-dev zstd procps rsync openssl \
            stress-ng clang-format
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)

OPT      ?= -O2 -g
CFLAGS   += $(OPT) -std=c11 -D_GNU_SOURCE -pthread -Wall -Wextra -Wshadow \
            -Wno-unused-parameter -Ilib -DMTC_VERSION='"$(VERSION)"'
LDLIBS   += -pthread -lm
# Warnings are errors where the compiler is the one the tree is kept with (make check, CI:
# WERROR=1), not for a plain make, where a newer compiler's new warning must not stop it.
ifneq ($(WERROR),)
CFLAGS   += -Werror
endif

ifneq ($(SANITIZE),)
B        ?= build/asan
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
else
B        ?= build/release
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS     += $(PKG_CFLAGS)
LDLIBS     += $(PKG_LIBS)

LIB_SRC  := $(wildcard lib/*.c lib/*/*.c)
LIB_HDR  := $(wildcard lib/*.h lib/*/*.h)
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
CMD_SRC  := $(wildcard cmd/*.c)
CMD_COMMON := $(patsubst %.c,$(B)/%.o,$(wildcard cmd/common/*.c))
PROGS    := $(CMD_SRC:cmd/%.c=$(B)/bin/%)
UNIT_SRC := $(wildcard tests/unit/*.c)
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(B)/unit/%)
LIBMTC   := $(B)/lib/libmtc.a

.SECONDEXPANSION:
.PHONY: all have-deps check-builds check check-stress check-long asan fuzz format format-check bench demo deps install clean venv node-client schemas
all: $(PROGS) $(UNITS)
	@ln -sfn $(notdir $(B)) build/current 2>/dev/null || true

$(B)/%.o: %.c $(LIB_HDR) $(wildcard cmd/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(LIBMTC): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

$(B)/bin/%: $(B)/cmd/%.o $$(addprefix $(B)/,$$(addsuffix .o,$$(basename $$(wildcard cmd/$$*/*.c)))) $(CMD_COMMON) $(LIBMTC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/unit/%: $(B)/tests/unit/%.o $(LIBMTC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

asan:
	@$(MAKE) --no-print-directory SANITIZE=1 all

# make check: the whole suite on the release build and under ASan+UBSan, in parallel
# lanes (tests/run; TESTS=tests/x.bats limits it to those files). The three builds and
# the downloads for the tests share one make, so the venv's install overlaps compiling.
# A missing build dependency brings `make deps` first, so a fresh machine needs no set-up.
have-deps:
	@pkg-config --exists $(PKGS) && command -v bats >/dev/null && command -v b3sum >/dev/null \
	    && command -v clang >/dev/null && command -v jq >/dev/null && command -v inotifywait >/dev/null \
	    && command -v stress-ng >/dev/null && command -v clang-format >/dev/null || $(MAKE) --no-print-directory deps

check-builds: have-deps
	@$(MAKE) --no-print-directory -j$(JOBS) WERROR=1 all venv node-client schemas asan fuzz

check: check-builds
	@tests/run build/release build/asan $(if $(TESTS),-- $(TESTS))

# make check-stress: the same while stress-ng keeps every core busy, as CI's other lane
# does: a test that passes only on an idle machine fails here. TESTS= as for check.
check-stress: check-builds
	@stress-ng --cpu $(JOBS) --timeout 2h --quiet & s=$$!; \
	    tests/run build/release build/asan $(if $(TESTS),-- $(TESTS)); rc=$$?; \
	    kill $$s; wait $$s; exit $$rc

# make format-check: every C file as .clang-format says (clang-format 14, Debian 12's);
# make format rewrites them so.
FORMAT_SRC := $(wildcard lib/*.[ch] lib/*/*.[ch] cmd/*.[ch] cmd/*/*.[ch] tests/unit/*.[ch] tests/fuzz/*.c)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRC)
format:
	clang-format -i $(FORMAT_SRC)

# The real frameworks, for tests only (oracles and the Orbax stand-in), and moto (a real S3
# and STS that checks signatures), boto3 and the AWS CLI: a venv under the build dir. Where
# PyPI cannot be reached the tests that need it say so and are skipped; the programs never
# need Python. .complete holds the list installed: a venv made before a package joined the
# list gets it added. Globbing is off: moto[server] is a package, not a pattern.
VENV     := build/venv
PY_PKGS   = orbax-checkpoint jax jaxlib tensorstore blake3 moto[server] boto3 awscli
venv:
	@set -f; grep -qxF "$(PY_PKGS)" $(VENV)/.complete 2>/dev/null || { rm -f $(VENV)/.complete \
	    && { [ -x $(VENV)/bin/pip ] || { rm -rf $(VENV) && python3 -m venv $(VENV); }; } \
	    && $(VENV)/bin/pip install -q --disable-pip-version-check $(PY_PKGS) >$(VENV).log 2>&1 \
	    && echo "$(PY_PKGS)" >$(VENV)/.complete \
	    || echo "# venv: cannot install $(PY_PKGS) (see $(VENV).log): tests of the real frameworks are skipped"; }

# The API schemas tests/deploy.bats checks the JobSet against, as PyPI ships them: models
# generated from the OpenAPI specs, read from the wheels (never installed or imported).
# Kubernetes 1.29 (the JobSet's minimum) and 1.27 (the pre-1.29 form's) in the official
# client's releases 29 and 27; JobSet v1alpha2 in Kubeflow Trainer's API models (no
# package ships JobSet's CRD). Where PyPI cannot be reached those checks are skipped.
SCHEMA_DIR := build/schemas
SCHEMA_PKGS = kubernetes==29.0.0 kubernetes==27.2.0 kubeflow-trainer-api==2.3.0
schemas:
	@grep -qxF '$(SCHEMA_PKGS)' $(SCHEMA_DIR)/.complete 2>/dev/null || { rm -rf $(SCHEMA_DIR) && mkdir -p $(SCHEMA_DIR) \
	    && for p in $(SCHEMA_PKGS); do python3 -m pip download -q --no-deps --disable-pip-version-check \
	        -d $(SCHEMA_DIR) $$p || exit 1; done >$(SCHEMA_DIR).log 2>&1 \
	    && echo '$(SCHEMA_PKGS)' >$(SCHEMA_DIR)/.complete \
	    || echo "# schemas: cannot download $(SCHEMA_PKGS) (see $(SCHEMA_DIR).log): the JobSet's schema checks are skipped"; }

# Google's own Node.js client for Cloud Storage, a second real client that checks the
# fake GCS server (tests/fakegcs.bats): from the npm registry into the build dir, the
# version pinned (7.22 is the last release that runs on Debian 12's Node 18). Where the
# registry cannot be reached the tests that need it say so and are skipped.
NODE_DIR := build/node
NODE_PKGS = @google-cloud/storage@7.22.0
node-client:
	@grep -qxF '$(NODE_PKGS)' $(NODE_DIR)/.complete 2>/dev/null || { mkdir -p $(NODE_DIR) \
	    && command -v npm >$(NODE_DIR).log 2>&1 \
	    && npm install --prefix $(NODE_DIR) --save-exact --no-audit --no-fund --fetch-retries=1 \
	        $(NODE_PKGS) >>$(NODE_DIR).log 2>&1 \
	    && echo '$(NODE_PKGS)' >$(NODE_DIR)/.complete \
	    || echo "# node-client: cannot install $(NODE_PKGS) (see $(NODE_DIR).log): tests with Google's Node.js client are skipped"; }

# Fuzz targets link a copy of the library built by clang with libFuzzer and the sanitizers.
# The cluster scenarios at N = 16, the data-parallel and the multi-host ones at N = 8 (make check runs them at N = 4).
check-long: have-deps
	@$(MAKE) --no-print-directory all venv
	MTC_LONG=1 MTC_BIN=$(CURDIR)/build/release/bin MTC_BUILD=build/release bats --tap tests/cluster.bats tests/cluster_dp.bats tests/hosts.bats

FUZZ_SRC   := $(wildcard tests/fuzz/*.c)
FUZZERS    := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
FUZZ_FLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -pthread -Ilib $(PKG_CFLAGS) -DMTC_VERSION='"$(VERSION)"' \
              -fsanitize=fuzzer-no-link,address,undefined
FUZZ_OBJ   := $(LIB_SRC:%.c=build/fuzz/%.o)
fuzz: $(FUZZERS)
build/fuzz/%.o: %.c $(LIB_HDR)
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) -c -o $@ $<
build/fuzz/libmtc.a: $(FUZZ_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
build/fuzz/%: tests/fuzz/%.c build/fuzz/libmtc.a
	clang $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lm

bench: all venv node-client
	@tests/bench/run build/release

demo: have-deps
	@$(MAKE) --no-print-directory all
	@contrib/demo.sh build/release/bin

# Node.js and npm (for Google's Node.js client in the tests) only where there are none:
# Debian's npm conflicts with a nodejs from elsewhere (NodeSource bundles its own npm).
# What tests/deploy.bats and tests/slurm.bats run the shipped files with: a real Slurm
# (slurm.bats starts its daemons itself), systemd-analyze, sysusers and tmpfiles, and
# promtool (Debian's prometheus, about 100 MB installed). Where they cannot be installed
# those tests say so and are skipped.
DEPLOY_DEBS = slurmctld slurmd slurm-client munge systemd prometheus
deps:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEBS)
	@DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEPLOY_DEBS) \
	    || echo "# deps: cannot install $(DEPLOY_DEBS): the tests of the deployment files that need them are skipped"
	@command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends nodejs npm || echo "# deps: no nodejs/npm: tests with Google's Node.js client are skipped"

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7 \
	    $(DESTDIR)$(PREFIX)/share/man/man8 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 755 $(PROGS) $(wildcard contrib/mtc-node) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(wildcard man/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(wildcard man/*.7) $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 644 $(wildcard man/*.8) $(DESTDIR)$(PREFIX)/share/man/man8/
	for f in completions/*.bash; do install -m 644 $$f $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$(basename $$f .bash); done
	for f in completions/_*; do install -m 644 $$f $(DESTDIR)$(PREFIX)/share/zsh/site-functions/; done

clean:
	rm -rf build
