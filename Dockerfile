# mockstore: a high-fidelity mock of the Pet Store service, as a CI service container.
#
#   docker build -t mockstore:0.1.0 .
#   docker run --rm -p 8080:8080 mockstore:0.1.0
#   docker run --rm -p 8080:8080 -v "$PWD/scenarios:/scenarios:ro" \
#       -e MOCKSTORE_SCENARIO=/scenarios/checkout.yaml mockstore:0.1.0
#
# Settings (environment):
#   MOCKSTORE_SCENARIO       bundled name (default) or a path; /scenarios is the place
#                            to mount your own files (a relative path is read from there)
#   MOCKSTORE_SCENARIO_YAML  a whole scenario inline, for CI service containers that start
#                            before the repository is checked out (or PUT one to
#                            /__mockstore/scenario after checkout)
#   MOCKSTORE_CONTROL_TOKEN  require this bearer token on the control API (the image
#                            otherwise serves it open: MOCKSTORE_INSECURE_CONTROL_API=1)
#   MOCKSTORE_LOG_FORMAT     text | json      MOCKSTORE_LOG_LEVEL  info | warning | ...
# A scenario that fails validation stops the container at start (exit 1), its
# problems in the log as file:line:column: path: message.

# --- build stage: the project and its dependencies as wheels ------------------------
FROM python:3.11.13-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY mockstore/ mockstore/
COPY scenarios/ scenarios/
# With the redis extra: the image can keep its state in Redis (MOCKSTORE_STATE,
# deploy/kubernetes-shared.yaml).
RUN pip wheel --no-cache-dir --disable-pip-version-check --wheel-dir /wheels '.[redis]'

# --- runtime stage: the wheels installed, no sources, no compilers -------------------
FROM python:3.11.13-slim-bookworm
LABEL org.opencontainers.image.title="mockstore" \
      org.opencontainers.image.description="A high-fidelity mock server of the Pet Store service" \
      org.opencontainers.image.licenses="MIT"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --disable-pip-version-check --no-index /wheels/*.whl
RUN groupadd --system --gid 10001 mockstore \
    && useradd --system --no-log-init --uid 10001 --gid mockstore --home-dir /nonexistent \
       --shell /usr/sbin/nologin mockstore \
    && mkdir -p /scenarios
# Users' scenario files: mount a directory here (read-only is enough).
WORKDIR /scenarios
USER 10001:10001
# Every interface, so that a published port reaches it; with no token, the control
# API is open to whoever reaches that port (a CI job's network, a test cluster):
# said so here, as mockstore refuses to start that way unless told. Set
# MOCKSTORE_CONTROL_TOKEN to close it (and MOCKSTORE_INSECURE_CONTROL_API=0).
ENV MOCKSTORE_HOST=0.0.0.0 \
    MOCKSTORE_INSECURE_CONTROL_API=1 \
    MOCKSTORE_PORT=8080 \
    MOCKSTORE_LOG_FORMAT=text
EXPOSE 8080
# Slim images have no curl: Python itself asks the control API's health endpoint
# (which needs no token). Any failure (refused, timeout, non-2xx) exits non-zero.
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/__mockstore/health' % os.environ.get('MOCKSTORE_PORT', '8080'), timeout=2)"]
# Exec form: mockstore is PID 1 and gets the SIGTERM a CI runner sends to stop it.
STOPSIGNAL SIGTERM
ENTRYPOINT ["mockstore"]
CMD ["serve"]
