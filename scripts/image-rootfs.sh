#!/usr/bin/env bash
# The container image's root filesystem, built without a container engine. debootstrap installs the
# runtime stage's packages (deploy/image/runtime-packages.txt, the list the Dockerfile installs) into a
# Debian bookworm tree; then the release binary, sql/ and the non-root user go in at the paths and with
# the uid the Dockerfile gives. The Debian tree is cached under .build/image-rootfs/, keyed by a hash of
# the package list, the suite and the variant, so only the first run downloads (a few minutes); each
# prepare copies it anew to .build/image-rootfs/image, so nothing of an earlier run is left in the image.
#
#   scripts/image-rootfs.sh describe   # what the Dockerfile says: uid, paths, environment (any user)
#   scripts/image-rootfs.sh check      # exit 0 if this machine can build the tree, else say why, exit 1
#   scripts/image-rootfs.sh cache      # build the Debian tree if it can and is not cached (make test
#                                      # starts it beside the builds), else do nothing
#   scripts/image-rootfs.sh prepare [BINARY]
#                                      # build or reuse the tree, put herald in (default
#                                      # .build/release/herald) in a fresh copy; prints describe's
#                                      # lines and rootfs=DIR
#
# Then herald runs there as in a container of the image: as its user, with its ENV lines (describe's env=
# lines) and nothing of the host's, as PID 1 of its own process namespace with its own /proc (the Swift
# runtime reads its arguments from /proc/self/cmdline), on the host's network (DATABASE_URL on loopback):
#   env -i HERALD_SQL_DIR=… DATABASE_URL=… unshare --mount --pid --fork --kill-child --mount-proc=DIR/proc \
#     chroot --userspec=10001:10001 DIR /usr/local/bin/herald migrate
#
# The mirror is the one apt uses on this machine for bookworm (else deb.debian.org); set
# HERALD_DEBIAN_MIRROR to choose another. Root is needed (debootstrap, chroot).
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

DOCKERFILE=Dockerfile
PACKAGES=deploy/image/runtime-packages.txt
SUITE=bookworm
VARIANT=minbase
CACHE=.build/image-rootfs

die() { echo "image-rootfs: $*" >&2; exit 1; }

# The package list as the Dockerfile reads it: comments and blank lines dropped.
packages() { sed 's/#.*//' "$PACKAGES" | tr -s ' \t\n' '\n' | sed '/^$/d'; }

# The runtime stage: the Dockerfile's lines after its last FROM.
runtime_stage() { awk '/^FROM /{ stage = "" } { stage = stage $0 "\n" } END { printf "%s", stage }' "$DOCKERFILE"; }

# One fact from the runtime stage, by a sed expression that prints it; dies when it is missing.
fact() {
  local value
  value=$(runtime_stage | sed -n "$1" | head -n1)
  [ -n "$value" ] || die "$DOCKERFILE: cannot read $2 (keep the line in the form scripts/image-rootfs.sh reads)"
  echo "$value"
}

describe() {
  local uid user entrypoint binary sql
  uid=$(fact 's/^ARG HERALD_UID=\([0-9][0-9]*\)$/\1/p' 'ARG HERALD_UID=<uid>')
  user=$(fact 's/^USER \([^ ]*\)$/\1/p' 'USER <uid>:<gid>')
  user=$(sed "s/\\\${\{0,1\}HERALD_UID}\{0,1\}/$uid/g" <<<"$user")
  entrypoint=$(fact 's/^ENTRYPOINT \["\([^"]*\)".*/\1/p' 'ENTRYPOINT ["<path>"]')
  binary=$(fact 's/^COPY --from=build [^ ]* \([^ ]*\)$/\1/p' 'COPY --from=build <file> <path>')
  sql=$(fact 's/^COPY sql\/\{0,1\} \([^ ]*[^/ ]\)\/\{0,1\}$/\1/p' 'COPY sql/ <dir>')
  printf 'uid=%s\nuser=%s\nentrypoint=%s\nbinary=%s\nsql=%s\n' "$uid" "$user" "$entrypoint" "$binary" "$sql"
  runtime_stage | sed -n 's/^ENV \([A-Z_][A-Z0-9_]*=[^ ]*\)$/env=\1/p'
  echo "packages=$(packages | paste -sd' ' -)"
}

# The bookworm mirror of apt's sources (deb822 .sources or one-line .list), else deb.debian.org.
mirror() {
  if [ -n "${HERALD_DEBIAN_MIRROR:-}" ]; then echo "$HERALD_DEBIAN_MIRROR"; return; fi
  local found
  found=$( { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v suite="$SUITE" '
               BEGIN { RS = ""; FS = "\n" }
               { uris = ""; ok = 0
                 for (i = 1; i <= NF; i++) {
                   if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", $i); split($i, u, /[ \t]+/); uris = u[1] }
                   if ($i ~ /^Suites:/ && (" " $i " ") ~ (" " suite " ")) ok = 1
                 }
                 if (ok && uris != "") print uris }'
             cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | sed 's/\[[^]]*\]//' |
               awk -v suite="$SUITE" '$1 == "deb" && $3 == suite { print $2 }'; } | head -n1 || true)
  echo "${found:-http://deb.debian.org/debian}"
}

key() { { packages; echo "$SUITE $VARIANT"; } | sha256sum | cut -c1-16; }

# Why this machine cannot build the tree, or nothing.
unavailable() {
  [ "$(id -u)" -eq 0 ] || { echo "needs root (debootstrap and chroot)"; return; }
  command -v chroot >/dev/null 2>&1 || { echo "needs chroot (coreutils)"; return; }
  command -v unshare >/dev/null 2>&1 || { echo "needs unshare (util-linux)"; return; }
  [ -d "$CACHE/debian-$(key)" ] && return
  command -v debootstrap >/dev/null 2>&1 || { echo "needs debootstrap (scripts/deps.sh installs it)"; return; }
  local m; m=$(mirror)
  wget -q --spider --timeout=15 --tries=2 "$m/dists/$SUITE/Release" 2>/dev/null \
    || echo "needs the Debian mirror $m (debootstrap downloads from it), or a tree cached in $CACHE"
}

# The cached Debian tree for this package list: built under another name and renamed when complete,
# so an interrupted debootstrap is never reused; trees of other package lists are removed.
debian_tree() {
  local dir="$CACHE/debian-$(key)"
  if [ ! -d "$dir" ]; then
    local m; m=$(mirror)
    rm -rf "$dir.partial"
    echo "image-rootfs: debootstrap $SUITE from $m with $(packages | paste -sd, -) (a few minutes)" >&2
    local started=$SECONDS
    timeout 1500 debootstrap --variant="$VARIANT" --include="$(packages | paste -sd, -)" \
      "$SUITE" "$dir.partial" "$m" >"$CACHE/debootstrap.log" 2>&1 \
      || { tail -n 20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE/debootstrap.log)"; }
    rm -rf "$dir.partial/var/cache/apt/archives/"*.deb
    mv "$dir.partial" "$dir"
    echo "image-rootfs: debootstrap took $((SECONDS - started)) s" >&2
    find "$CACHE" -mindepth 1 -maxdepth 1 -type d -name 'debian-*' ! -name "debian-$(key)" -exec rm -rf {} +
  fi
  echo "$dir"
}

# The Dockerfile's runtime steps on the tree: its user and group, the binary, sql/.
install_herald() {
  local dir=$1 binary=$2 facts=$3 uid target sql
  uid=$(sed -n 's/^uid=//p' <<<"$facts")
  target=$(sed -n 's/^binary=//p' <<<"$facts")
  sql=$(sed -n 's/^sql=//p' <<<"$facts")
  chroot "$dir" groupadd --gid "$uid" herald
  chroot "$dir" useradd --uid "$uid" --gid "$uid" --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin herald
  install -D -m 0755 "$binary" "$dir$target"
  mkdir -p "$dir$sql"
  cp -R sql/. "$dir$sql/"
}

case "${1:-}" in
  describe)
    describe
    ;;
  check)
    reason=$(unavailable)
    if [ -n "$reason" ]; then echo "$reason"; exit 1; fi
    ;;
  cache)
    [ -z "$(unavailable)" ] || exit 0
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9
    debian_tree >/dev/null
    ;;
  prepare)
    binary="${2:-.build/release/herald}"
    [ -x "$binary" ] || die "no binary at $binary: run make release"
    reason=$(unavailable)
    [ -z "$reason" ] || die "$reason"
    facts=$(describe)
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9
    debian=$(debian_tree)
    dir="$CACHE/image"
    rm -rf --one-file-system "$dir"
    cp -a "$debian" "$dir"
    install_herald "$dir" "$binary" "$facts"
    echo "$facts"
    echo "rootfs=$(pwd)/$dir"
    ;;
  *)
    echo "usage: scripts/image-rootfs.sh describe|check|cache|prepare [BINARY]" >&2; exit 2
    ;;
esac
