#!/usr/bin/env bash
# Builds CRIU 4.1.1 (Debian trixie's source) into /usr/local/sbin/criu when no working criu is
# installed, so that rootful Podman can checkpoint a sandbox's memory (`agentc snapshot
# --memory`, docs/snapshots.md). Debian 12's own criu (3.17.1) fails on kernels that map
# [vvar_vclock] ("vdso: Unexpected rt vDSO area bounds", kernel >= 6.x), so it is not used.
#
# Idempotent and NEVER fatal: when `criu check` already passes it does nothing; when the source
# cannot be fetched or the build fails it says why and exits 0 (memory snapshots are then
# refused by name, and their live test checks that refusal instead).
#
# Usage: scripts/setup-criu.sh          (as root; called by .ci/run)
# Environment:
#   AGENTC_CRIU_VERSION   the Debian source version to build (default 4.1.1-1)
#
# Leaves behind: /usr/local/sbin/criu; the build dependencies (Debian 12 packages, listed
# below). The temporary deb-src entry for trixie and the build directory are removed; no
# package from trixie is installed (libc6 is never upgraded).
set -uo pipefail

version=${AGENTC_CRIU_VERSION:-4.1.1-1}
upstream=${version%-*}
dest=/usr/local/sbin/criu
src_list=/etc/apt/sources.list.d/agentc-criu-trixie-src.sources

say() { printf 'setup-criu: %s\n' "$*"; }
skip() { say "skipped: $*; memory snapshots (--memory) stay refused"; exit 0; }

[[ $(id -u) == 0 ]] || skip "not root"

if command -v criu >/dev/null 2>&1 && criu check >/dev/null 2>&1; then
    say "criu $(criu --version 2>/dev/null | sed -n 's/^Version: //p') passes 'criu check'"
    exit 0
fi

deps=(gcc make pkg-config libc6-dev libprotobuf-dev libprotobuf-c-dev protobuf-c-compiler
    protobuf-compiler python3-protobuf libnl-3-dev libnet1-dev libcap-dev libbsd-dev
    libgnutls28-dev libnftables-dev uuid-dev libdrm-dev xz-utils dpkg-dev)

work=$(mktemp -d /tmp/agentc-criu.XXXXXX)
cleanup() { rm -f "$src_list"; rm -rf "$work"; apt-get update -qq >/dev/null 2>&1 || true; }
trap cleanup EXIT

say "building criu $upstream from Debian trixie's source (no working criu found)"
cat >"$src_list" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed (no network to the Debian archive?)"
(cd "$work" && apt-get source --download-only -qq "criu=$version" >/dev/null 2>&1) || true
orig=$(ls "$work"/criu_"$upstream".orig.tar.* 2>/dev/null | head -1)
[[ -n $orig ]] || skip "could not download criu_$upstream.orig.tar.* from the archive"

missing=()
for p in "${deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    say "installing build dependencies: ${missing[*]}"
    rm -f "$src_list"
    apt-get update -qq >/dev/null 2>&1
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >"$work/apt.log" 2>&1; then
        tail -5 "$work/apt.log" | sed 's/^/setup-criu:   /'
        skip "could not install the build dependencies"
    fi
fi

tar -xf "$orig" -C "$work" || skip "could not unpack $orig"
dir=$(find "$work" -maxdepth 1 -type d -name 'criu-*' | head -1)
[[ -n $dir ]] || skip "no criu-* directory in $orig"
say "make criu (a few minutes; log in $work/build.log until it succeeds)"
if ! make -C "$dir" -j"$(nproc)" criu >"$work/build.log" 2>&1; then
    tail -20 "$work/build.log" | sed 's/^/setup-criu:   /'
    skip "the build failed"
fi
install -m 0755 "$dir/criu/criu" "$dest" || skip "could not install $dest"
hash -r
if criu check >/dev/null 2>&1; then
    say "installed $dest ($("$dest" --version | sed -n 's/^Version: //p')): 'criu check' passes"
else
    say "installed $dest, but 'criu check' fails:"
    criu check 2>&1 | tail -5 | sed 's/^/setup-criu:   /'
    skip "criu check fails on this kernel"
fi
exit 0
