#!/bin/sh
# The install step of agentc's bundled agent images, run once as root by their Dockerfile from
# the context it copied to /usr/local/share/agentc/context: the agent user, its home, the
# agent's package, the entrypoint, and no setuid or setgid file left.
#
# Usage: agentc-install.sh npm|pip USER HOME EXECUTABLE PACKAGE VERSION UID GID
set -eu
kind=$1 user=$2 home=$3 executable=$4 package=$5 version=$6 uid=$7 gid=$8
shared=/usr/local/share/agentc
context=$shared/context

fail() {
    echo "agentc-install: $*" >&2
    exit 1
}

case "$uid:$gid" in
    0:* | *:0) fail "the agent user must not be root (UID=$uid GID=$gid); pass your own ids, or 1000" ;;
esac

# The account. A base's own user or group with these ids (the node images' `node`, 1000) gives
# way to the agent's, so that files and processes show the agent's name.
existing=$(getent passwd "$uid" | cut -d: -f1 || true)
if [ -n "$existing" ] && [ "$existing" != "$user" ]; then
    userdel "$existing"
fi
if ! getent group "$gid" >/dev/null; then
    groupadd --gid "$gid" "$user"
fi
if ! getent passwd "$user" >/dev/null; then
    useradd --uid "$uid" --gid "$gid" --home-dir "$home" --no-create-home --shell /bin/sh "$user"
fi
mkdir -p "$home"
chown "$uid:$gid" "$home"
chmod 0750 "$home"

# The package: a file of the context's packages/, or a registry package at a version.
case "$package" in
    packages/*)
        source="$context/$package"
        [ -f "$source" ] || fail "AGENT_PACKAGE $package is not a file of the context's packages/"
        from_file=1
        ;;
    *)
        source=$package
        from_file=0
        ;;
esac
case "$kind" in
    npm)
        if [ "$from_file" = 1 ]; then
            npm install --global --offline --no-audit --no-fund "$source"
        elif [ "$version" = latest ]; then
            npm install --global --no-audit --no-fund "$source"
        else
            npm install --global --no-audit --no-fund "$source@$version"
        fi
        npm ls --global --depth=0 --parseable --long >"$shared/installed.txt"
        npm cache clean --force >/dev/null 2>&1 || true
        ;;
    pip)
        python3 -m venv /opt/agentc-venv
        pip=/opt/agentc-venv/bin/pip
        if [ "$from_file" = 1 ]; then
            "$pip" install --no-index --no-cache-dir --disable-pip-version-check "$source"
        elif [ "$version" = latest ]; then
            "$pip" install --no-cache-dir --disable-pip-version-check "$source"
        else
            "$pip" install --no-cache-dir --disable-pip-version-check "$source==$version"
        fi
        "$pip" list --format=freeze --disable-pip-version-check >"$shared/installed.txt"
        [ -x "/opt/agentc-venv/bin/$executable" ] && ln -sf "/opt/agentc-venv/bin/$executable" /usr/local/bin/
        ;;
    *)
        fail "unknown package kind $kind"
        ;;
esac
command -v "$executable" >/dev/null || fail "the package installed no $executable"
mkdir -p /usr/local/lib/agentc

# The agent needs no privilege: strip every setuid and setgid bit on the root filesystem.
find / -xdev -type f -perm /6000 -exec chmod ug-s {} + 2>/dev/null || true
# /tmp and /run: agentc mounts a tmpfs mode=1777 on each, but runc before 1.1.8 and crun before
# 1.12 give a tmpfs the directory's mode instead: both 1777 here, so the agent can write them
# under any runtime and any launcher.
chmod 1777 /tmp /run
install -m 0755 "$context/agentc-entrypoint.sh" /usr/local/lib/agentc/agentc-entrypoint.sh
rm -rf "$context"
