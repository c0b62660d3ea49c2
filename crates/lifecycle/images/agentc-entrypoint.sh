#!/bin/sh
# The entrypoint of agentc's bundled agent images. The image has no firewall: agentc's egress
# proxy enforces the allowlist outside the container. A launch that hands the image an
# allowlist to enforce itself (AGENT_ALLOWED_EGRESS other than `*`, or an SSH gateway) would run
# open, so it is refused; otherwise the command runs as given.
allowed=${AGENT_ALLOWED_EGRESS-*}
if [ "$allowed" != "*" ] || [ -n "${AGENT_GATEWAY_HOST-}" ]; then
    echo "agentc image: this image has no egress firewall, so it cannot enforce the allowlist the launch hands it (AGENT_ALLOWED_EGRESS=$allowed${AGENT_GATEWAY_HOST:+, gateway $AGENT_GATEWAY_HOST})" >&2
    echo "  hint: let agentc's proxy enforce it (egress.enforce = \"outside\", the default, with hosts), or set egress.mode = \"deny\"" >&2
    exit 126
fi
exec "$@"
