# herald's container image: one pass per run, as the Kubernetes CronJob in deploy/kubernetes runs it.
#
#   docker build -t registry.example.com/herald:<version> .
#
# Stage "build": the release binary, built as `make release` builds it, with the Swift runtime and
# Foundation linked in (--static-swift-stdlib), so the runtime stage needs no Swift toolchain.
# Stage "runtime": Debian bookworm-slim with only the shared libraries the binary loads, installed from
# deploy/image/runtime-packages.txt, herald's migrations at /usr/share/herald/sql (HERALD_SQL_DIR), and a
# non-root user whose uid is the CronJob's runAsUser.
#
# There is no container engine in CI: scripts/image-rootfs.sh reads this file (the uid, the ENV lines,
# the COPY destinations and the ENTRYPOINT) and builds the same root filesystem with debootstrap from
# the same package list; a test runs `herald migrate` and a pass in it through chroot as that user
# (docs/operations.md, "Container image"). Keep those lines in the forms the script reads.

FROM swift:6.3.1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libpq-dev libcurl4-openssl-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN swift build -c release --static-swift-stdlib --product herald \
 && install -m 0755 "$(swift build -c release --static-swift-stdlib --show-bin-path)/herald" /herald

FROM debian:bookworm-slim AS runtime
# A RUN whose pipe fails fails the build (bash is in Debian's base, slim included).
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG HERALD_UID=10001
COPY deploy/image/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && sed 's/#.*//' /tmp/runtime-packages.txt | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --gid "$HERALD_UID" herald \
 && useradd --uid "$HERALD_UID" --gid "$HERALD_UID" --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin herald
COPY --from=build /herald /usr/local/bin/herald
COPY sql/ /usr/share/herald/sql/
ENV HERALD_SQL_DIR=/usr/share/herald/sql
USER $HERALD_UID:$HERALD_UID
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["run"]
