#!/usr/bin/env bash
# Builds the tiny local image the live-daemon tests run: Debian's static busybox, the agent users
# agentc's presets expect, and nothing else. No registry is contacted: the image is assembled from
# a directory with `docker import`.
#
# Usage: scripts/build-test-image.sh [--print-tag] [TAG]
#   TAG          defaults to agentc-test/busybox:<first 12 hex digits of this script's sha256>,
#                so editing this script gives a new tag and the tests rebuild on their own.
#   --print-tag  prints the default tag and exits.
#
# Needs: bash, coreutils, tar, dpkg-deb, a running Docker daemon, and one of:
#   - AGENTC_BUSYBOX_DEB=/path/to/busybox-static_*.deb,
#   - a cached /var/cache/apt/archives/busybox-static_*.deb,
#   - `apt-get download busybox-static` working (Debian package lists present: `apt-get update`).
# Run as root (or with fakeroot-free `chown` rights) so the home directories get their owners;
# otherwise they are left owned by root and a warning is printed.
#
# The image:
#   /bin/busybox plus a symlink in /bin for every applet (`busybox --list`), /usr/bin/env;
#   /etc/passwd and /etc/group with root (0), claude, opencode and codex (1000, sharing the uid
#   as the agent images do), hermes (10000), nobody (65534);
#   homes /home/claude, /home/opencode, /home/codex, /opt/data (hermes), owned by their users;
#   /tmp and /run (1777), /workspace, /proc, /sys, /dev mount points; CMD ["/bin/sh"].
set -euo pipefail

script_path=$(readlink -f "${BASH_SOURCE[0]}")
default_tag="agentc-test/busybox:$(sha256sum "$script_path" | cut -c1-12)"

if [[ "${1:-}" == "--print-tag" ]]; then
    printf '%s\n' "$default_tag"
    exit 0
fi
tag=${1:-$default_tag}

work=$(mktemp -d "${TMPDIR:-/tmp}/agentc-test-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

deb=${AGENTC_BUSYBOX_DEB:-}
if [[ -z "$deb" ]]; then
    for cached in /var/cache/apt/archives/busybox-static_*.deb; do
        [[ -f "$cached" ]] && deb=$cached
    done
fi
if [[ -z "$deb" ]]; then
    # `_apt` cannot write into a private mktemp directory; let it, to avoid apt's sandbox warning.
    chmod 0777 "$work"
    if ! (cd "$work" && apt-get download -q busybox-static >&2); then
        echo "build-test-image: cannot get busybox-static: set AGENTC_BUSYBOX_DEB or run apt-get update" >&2
        exit 1
    fi
    deb=$(ls "$work"/busybox-static_*.deb)
fi

dpkg-deb -x "$deb" "$work/deb"
rootfs="$work/rootfs"
mkdir -p "$rootfs"/{bin,usr/bin,etc,home,opt,tmp,run,workspace,proc,sys,dev,root}
install -m 0755 "$work/deb/bin/busybox" "$rootfs/bin/busybox"
for applet in $("$rootfs/bin/busybox" --list); do
    [[ "$applet" == busybox || -e "$rootfs/bin/$applet" ]] && continue
    ln -s busybox "$rootfs/bin/$applet"
done
ln -s ../../bin/busybox "$rootfs/usr/bin/env"
# /tmp and /run writable by the agent users under any runtime (runc before 1.1.8 gives a tmpfs
# the directory's mode over agentc's mode=1777), as agentc's bundled images ship them.
chmod 1777 "$rootfs/tmp" "$rootfs/run"
chmod 0700 "$rootfs/root"

cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
claude:x:1000:1000:claude:/home/claude:/bin/sh
opencode:x:1000:1000:opencode:/home/opencode:/bin/sh
codex:x:1000:1000:codex:/home/codex:/bin/sh
hermes:x:10000:10000:hermes:/opt/data:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
claude:x:1000:claude,opencode,codex
hermes:x:10000:hermes
nogroup:x:65534:
EOF
printf 'hosts: files dns\n' >"$rootfs/etc/nsswitch.conf"

owners=(claude:/home/claude:1000 opencode:/home/opencode:1000 codex:/home/codex:1000 hermes:/opt/data:10000)
can_chown=1
[[ $(id -u) == 0 ]] || can_chown=0
for entry in "${owners[@]}"; do
    IFS=: read -r _ home id <<<"$entry"
    mkdir -p "$rootfs$home"
    chmod 0755 "$rootfs$home"
    if [[ $can_chown == 1 ]]; then
        chown "$id:$id" "$rootfs$home"
    fi
done
if [[ $can_chown == 0 ]]; then
    echo "build-test-image: not root: home directories stay owned by root" >&2
fi

tar --numeric-owner -C "$rootfs" -c . |
    docker import \
        --change 'CMD ["/bin/sh"]' \
        --change 'ENV PATH=/bin:/usr/bin' \
        --change 'LABEL agentc-test.image=busybox' \
        - "$tag" >/dev/null
# Drop test images of earlier versions of this script (best effort: one still in use stays).
repository=${tag%:*}
for stale in $(docker image ls --format '{{.Repository}}:{{.Tag}}' "$repository"); do
    [[ "$stale" == "$tag" ]] || docker image rm "$stale" >/dev/null 2>&1 || true
done
printf '%s\n' "$tag"
