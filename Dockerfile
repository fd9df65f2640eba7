# Numascope in one image: the dashboard and JSON API (default CMD), the node agent the DaemonSet
# runs (`serve --observe --publish-nrt`, as UID 0 without capabilities, see deploy/) and the
# fleet hub (`serve --hub`). Built and smoke-tested in all three roles by scripts/image-smoke.sh.
#
#   docker build -t numascope . && docker run -p 8000:8000 -v numascope:/var/lib/numascope numascope
#
# BASE_IMAGE is python:3.11-slim pinned by the digest of its multi-arch index (resolved
# 2026-08-21: Python 3.11.16 on Debian trixie); bump it deliberately. scripts/image-smoke.sh
# passes a stand-in built from Debian bookworm with mmdebstrap when no registry is reachable.
ARG BASE_IMAGE=docker.io/library/python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

FROM ${BASE_IMAGE} AS builder
ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
# The venv has no pip of its own (the base's pip installs into it): nothing unused shipped.
RUN python -m venv --without-pip /opt/numascope
# Dependencies first and from the lock file, so a change to the sources does not reinstall
# them. The optional secret `pip.conf` is a pip configuration for this build (the index, a
# proxy's CA...): scripts/image-smoke.sh passes the host's, nothing about it is kept.
COPY requirements.lock ./
RUN --mount=type=secret,id=pip.conf,required=false \
    PIP_CONFIG_FILE=/run/secrets/pip.conf \
    python -m pip --python /opt/numascope/bin/python install --no-deps -r requirements.lock
# The package, not editable: templates/, static/ and migrations/ ship inside it as package data
# (app/templates, app/static and app/migrations link to them).
COPY pyproject.toml README.md ./
COPY templates ./templates
COPY static ./static
COPY migrations ./migrations
COPY app ./app
RUN --mount=type=secret,id=pip.conf,required=false \
    PIP_CONFIG_FILE=/run/secrets/pip.conf \
    python -m pip wheel --no-deps --wheel-dir /tmp/wheel . \
    && python -m pip --python /opt/numascope/bin/python install --no-deps /tmp/wheel/*.whl

FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/numascope/bin:$PATH
COPY --from=builder /opt/numascope /opt/numascope
# The data directory belongs to the image's user. No VOLUME (it would leave an anonymous volume
# behind every container, one-off CLI runs included): mount one to keep the data, e.g.
# `-v numascope:/var/lib/numascope`. A directory that user cannot write stops `serve` with a
# message naming the directory and the UID.
RUN mkdir -p /var/lib/numascope/nodes && chown -R 10001:10001 /var/lib/numascope
ENV NUMASCOPE_HOST=0.0.0.0 \
    NUMASCOPE_PORT=8000 \
    NUMASCOPE_DATABASE_URL=sqlite:////var/lib/numascope/numascope.db \
    NUMASCOPE_STATE_DIR=/var/lib/numascope/nodes
WORKDIR /var/lib/numascope
USER 10001:10001
EXPOSE 8000
# `numascope healthcheck` probes /healthz where the running server listens: it reads the
# server's own command line and environment (`serve --port N` as deploy/ runs it included).
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["numascope", "healthcheck"]
CMD ["numascope", "serve", "--host", "0.0.0.0"]
