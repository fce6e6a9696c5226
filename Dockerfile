# The service on its embedded ClickHouse (chDB), data in /data. Set CLICKHOUSE_URL to use a server instead.
# chDB ships glibc builds only, hence Debian rather than Alpine.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev && npm cache clean --force
COPY src ./src
COPY tsconfig.json ./
ENV HOST=0.0.0.0 PORT=8000 DATA_DIR=/data
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM is handled: in-flight requests finish and are written before the process exits.
CMD ["node_modules/.bin/bun", "src/main.ts"]
