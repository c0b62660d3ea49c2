#!/usr/bin/env bash
# Builds the local base the bundled agent images are built FROM on a machine without an image
# registry: Debian (this machine's release, from its own apt mirror) with Node.js, npm, Python
# and the CA roots, made by debootstrap and imported with `docker import`. No registry is
# contacted. Cached: an existing tag is kept (pass --rebuild to make it again).
#
# Usage: scripts/build-agent-base.sh [--print-tag] [--rebuild] [TAG]
#   TAG          defaults to agentc-local/agent-base:<codename>-<first 12 hex digits of this
#                script's sha256>, so editing this script gives a new tag.
#   --print-tag  prints the default tag and exits.
#
# Then: agentc build PROFILE --build-arg BASE_IMAGE=TAG (see docs/images.md).
#
# Needs root, debootstrap (installed with apt-get when missing), the Debian mirror of
# /etc/apt/sources.list.d or /etc/apt/sources.list, and a running Docker daemon. About a
# minute and 370 MB.
set -euo pipefail

script_path=$(readlink -f "${BASH_SOURCE[0]}")
# shellcheck disable=SC1091
. /etc/os-release
codename=${VERSION_CODENAME:?/etc/os-release names no VERSION_CODENAME}
default_tag="agentc-local/agent-base:${codename}-$(sha256sum "$script_path" | cut -c1-12)"

rebuild=0
tag=""
for arg in "$@"; do
    case "$arg" in
        --print-tag) printf '%s\n' "$default_tag"; exit 0 ;;
        --rebuild) rebuild=1 ;;
        -*) echo "build-agent-base: unknown option $arg" >&2; exit 2 ;;
        *) tag=$arg ;;
    esac
done
tag=${tag:-$default_tag}

if [[ $rebuild == 0 ]] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "build-agent-base: $tag is present (--rebuild to make it again)"
    printf '%s\n' "$tag"
    exit 0
fi

if [[ $(id -u) != 0 ]]; then
    echo "build-agent-base: debootstrap needs root" >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    }
fi

# The mirror this machine's apt uses (deb822 sources first, then the one-line format).
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\/*\) *$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | grep -v security | head -n1 || true)
if [[ -z "$mirror" ]]; then
    mirror=$(sed -n 's/^deb  *\(\[[^]]*\]  *\)\{0,1\}\(http[^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null \
        | grep -v security | head -n1 || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d "${TMPDIR:-/tmp}/agentc-agent-base.XXXXXX")
cleanup() {
    for mount in proc sys dev/pts dev; do
        umount "$work/root/$mount" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

echo "build-agent-base: debootstrap --variant=minbase $codename from $mirror"
debootstrap --variant=minbase "$codename" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -n 20 "$work/debootstrap.log" >&2
    exit 1
}
# The chroot's package lists point at the same mirror.
printf 'deb %s %s main\n' "$mirror" "$codename" >"$work/root/etc/apt/sources.list"
cp /etc/resolv.conf "$work/root/etc/resolv.conf"
mount -t proc proc "$work/root/proc"
echo "build-agent-base: installing nodejs npm python3 python3-pip python3-venv ca-certificates"
chroot "$work/root" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c '
    apt-get update -qq &&
    apt-get install -y -qq --no-install-recommends nodejs npm python3 python3-pip python3-venv ca-certificates >/dev/null &&
    apt-get clean &&
    rm -rf /var/lib/apt/lists/*' >"$work/install.log" 2>&1 || {
    tail -n 20 "$work/install.log" >&2
    exit 1
}
umount "$work/root/proc"
: >"$work/root/etc/resolv.conf"
rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/tmp/"* "$work/root/var/log/"*.log

node=$(chroot "$work/root" node --version)
python=$(chroot "$work/root" python3 --version | cut -d' ' -f2)
echo "build-agent-base: importing $tag (Node.js $node, Python $python)"
tar -C "$work/root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL io.agentc.base.debian=$codename io.agentc.base.node=$node io.agentc.base.python=$python" \
    - "$tag" >/dev/null
printf '%s\n' "$tag"
