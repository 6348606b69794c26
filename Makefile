# herald — the two commands a newcomer needs:
#   make demo    a real pass on demo data, every channel on the log adapter
#   make test    every test, against a disposable PostgreSQL
# and `make bench` for the performance figures, `make schema` after adding a migration.

SHELL      := /bin/bash
SWIFT      ?= swift
PG          = scripts/pg.sh
PG_URL      = $(shell $(PG) url)
HERALD      = .build/debug/herald
HERALD_REL  = .build/release/herald
RELEASE     = $(SWIFT) build -c release --static-swift-stdlib --product herald

.PHONY: all build release deps deps-bench test demo bench schema clean pg-start pg-stop

all: build

deps:
	@scripts/deps.sh

# What only `make bench` needs besides: h2load (nghttp2-client), for section 9's providers' ceiling.
deps-bench:
	@scripts/deps.sh --bench

build: deps
	$(SWIFT) build

# Starts PostgreSQL, runs every test with the server's URL, stops the server whatever the outcome,
# and ends with one line: "tests: N passed, N failed". The release binary is built too: the container
# image's test (ImageRootfsTests) runs it in the image's root filesystem, whose Debian tree is downloaded
# beside the builds (the test waits for it on a lock), so that no test runs beside debootstrap. The
# platforms' checkers (hadolint, kubernetes-validate, actionlint) are required: a missing one fails.
test: deps
	@mkdir -p .build && (scripts/image-rootfs.sh cache >.build/image-rootfs.log 2>&1 &)
	$(SWIFT) build --build-tests
	$(RELEASE)
	@url=$$($(PG) start) && trap '$(PG) stop' EXIT INT TERM && \
	  HERALD_TEST_DATABASE_URL="$$url" HERALD_TEST_CHECKERS=required $(SWIFT) test --skip-build 2>&1 | tee .build/test.log; \
	  rc=$${PIPESTATUS[0]}; scripts/test-summary.sh .build/test.log; exit $$rc

# Only the herald binary: the demo needs none of the test-only targets (SwiftNIO, BoringSSL).
demo: deps
	$(SWIFT) build --product herald
	@scripts/demo.sh

# The binary to deploy (.build/release/herald), with the Swift runtime and Foundation linked in: a
# pass with nothing to do takes 31–32 ms instead of 37–42 and peaks at 28 MB instead of 34 (fewer
# shared libraries to load and relocate); 99 MB on disk instead of 28. The bench measures the same build.
release: deps
	$(RELEASE)

# A second server, on the next port, runs with PostgreSQL's durability defaults and wal_level=logical
# for section 1's WAL as hosted databases pay it. `make bench BENCH=morning` (or BENCH=1,5) runs only
# those sections, by name or number (HERALD_BENCH_ONLY).
BENCH ?=
bench: deps-bench
	$(SWIFT) build -c release --static-swift-stdlib
	@durable_port=$$(( $${HERALD_PG_PORT:-25432} + 1 )) && \
	  trap '$(PG) stop; HERALD_PG_PORT='$$durable_port' $(PG) stop' EXIT INT TERM && \
	  url=$$($(PG) start) && durable=$$(HERALD_PG_PORT=$$durable_port HERALD_PG_DURABLE=1 $(PG) start) && \
	  HERALD_BENCH_ONLY="$${HERALD_BENCH_ONLY:-$(BENCH)}" \
	  HERALD_BENCH_DATABASE_URL="$$url" HERALD_BENCH_DURABLE_URL="$$durable" .build/release/herald-bench

# docs/schema.sql and docs/schema-index.md: the schema a fresh `herald migrate` leaves, and the migration
# that last defined each object, made by applying sql/ one migration at a time to a scratch database
# (scripts/schema.py). Run after adding a migration: `make test` fails while they differ.
schema: deps
	$(SWIFT) build --product herald
	@url=$$($(PG) start) && trap '$(PG) stop' EXIT INT TERM && python3 scripts/schema.py "$$url" --herald $(HERALD)

pg-start:
	@$(PG) start
pg-stop:
	@$(PG) stop

clean:
	rm -rf .build
