# syntax=docker/dockerfile:1
# The service as one executable (scripts/build.ts) in a slim image, run as a non-root user.
# chDB ships glibc builds only, hence Debian rather than Alpine; the executable needs nothing but glibc.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm install --omit=dev && npm cache clean --force
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin ingest \
  && mkdir -p /data /var/cache/ingest /import \
  && chown ingest:ingest /data /var/cache/ingest /import
COPY --from=build /src/dist/ingest /usr/local/bin/ingest
USER ingest
# DATA_DIR: the embedded engine's data (unused with CLICKHOUSE_URL). CHDB_CACHE_DIR: where the executable unpacks
# its engine on first start (about 570 MB), unused with CLICKHOUSE_URL.
ENV HOST=0.0.0.0 PORT=8000 DATA_DIR=/data CHDB_CACHE_DIR=/var/cache/ingest LOG_LEVEL=info
VOLUME /data
# The working directory, writable: `ingest import` keeps its checkpoint here (mount exports here to import them).
WORKDIR /import
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["/usr/local/bin/ingest", "--health-check"]
# The executable is PID 1 (exec form), so SIGTERM reaches it: requests in flight finish, then it exits.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/ingest"]
