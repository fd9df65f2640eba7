# Numascope dashboard + API: `docker build -t numascope . && docker run -p 8000:8000 numascope`
#
# The package is installed in editable mode so that templates/, static/ and migrations/
# (which live next to app/, not inside it) are found at run time.
# The image runs as a numeric non-root user. To observe a real node (kubelet state files are
# mode 0600, the PodResources socket needs write access), the DaemonSet runs it as UID 0
# with all capabilities dropped and read-only hostPath mounts (see deploy/).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/numascope

COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static

RUN pip install -e . \
    && python -m compileall -q app migrations \
    && mkdir -p /var/lib/numascope/nodes \
    && chown -R 10001:10001 /var/lib/numascope

ENV NUMASCOPE_HOST=0.0.0.0 \
    NUMASCOPE_PORT=8000 \
    NUMASCOPE_DATABASE_URL=sqlite:////var/lib/numascope/numascope.db \
    NUMASCOPE_STATE_DIR=/var/lib/numascope/nodes

USER 10001:10001
VOLUME ["/var/lib/numascope"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('NUMASCOPE_PORT', '8000'), timeout=4)"]

CMD ["numascope", "serve", "--host", "0.0.0.0"]
