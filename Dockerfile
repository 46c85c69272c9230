# refapi in a container (docs/operating.md, "Run it in a container"). Build it with
# `make image`: it downloads the wheels first (refapi's and what it needs, the
# PostgreSQL driver and Granian included) into dist/image/, the only thing sent to the build
# (.dockerignore), so the build itself runs with no network (docker build
# --network=none). The base needs only python3 with its venv module: no apt-get.
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
COPY dist/image/ /wheels/
# pip compiles the bytecode now: the service's user cannot write under /opt. pip
# and setuptools go afterwards, as nothing in the image installs anything.
RUN python3 -m venv /opt/refapi \
    && /opt/refapi/bin/pip install --no-index --find-links /wheels \
        --disable-pip-version-check --no-cache-dir --quiet "refapi[postgres,fast]" \
    && /opt/refapi/bin/pip uninstall --yes --quiet pip setuptools

FROM ${BASE_IMAGE}
ARG BASE_IMAGE
ARG VERSION=unknown
LABEL org.opencontainers.image.title="refapi" \
      org.opencontainers.image.description="The reference REST API service: a minimalist WSGI app" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
# A fixed uid, not root, so a volume's or a host folder's owner can be set to it
# ahead (chown 10001); /data, the volume, is its own and no one else's (the
# database, its secret key, the admin's password file: docs/operating.md, "What
# to expose").
RUN groupadd --system --gid 10001 refapi \
    && useradd --system --uid 10001 --gid refapi --home-dir /data \
        --no-create-home --shell /usr/sbin/nologin refapi \
    && mkdir --mode=0700 /data && chown refapi:refapi /data
COPY --from=build /opt/refapi /opt/refapi
# Every address of the container's own network: what reaches it is what the host
# publishes (docker run -p 127.0.0.1:8000:8000). SQLite and the data folder on the
# volume by default; DATABASE_URL=postgresql://... for PostgreSQL. Served by
# Granian, whose slow clients hold connections, not workers (docs/operating.md,
# "Two servers"); REFAPI_SERVER=gunicorn serves on gunicorn.
ENV PATH=/opt/refapi/bin:$PATH \
    REFAPI_SERVER=granian \
    REFAPI_BIND=0.0.0.0:8000 \
    REFAPI_DATA_DIR=/data \
    DATABASE_URL=sqlite:////data/refapi.db
USER 10001:10001
WORKDIR /data
VOLUME /data
EXPOSE 8000
# /healthz over the loopback, with the image's Python (a slim base has no curl), on
# the port REFAPI_BIND names; any answer but 200, or none in 4 s, is unhealthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import http.client, os, sys; port = os.environ['REFAPI_BIND'].rpartition(':')[2]; c = http.client.HTTPConnection('127.0.0.1', int(port), timeout=4); c.request('GET', '/healthz'); sys.exit(c.getresponse().status != 200)"]
# `refapi serve` runs Granian in its own process (gunicorn it execs), so the server
# is the container's first process and gets docker stop's SIGTERM itself: it
# finishes the requests in flight and exits 0.
# `docker run IMAGE reset` runs another command of refapi's.
ENTRYPOINT ["refapi"]
CMD ["serve"]
