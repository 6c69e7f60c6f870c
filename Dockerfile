# halserve — the self-hosted HAL+JSON server.
#
#   docker build -t halserve .
#   docker run -d -p 8080:8080 -e HALSERVE_TOKENS=change-me -v halserve-data:/data halserve
#
# Two stages: `build` installs the dev dependencies and compiles TypeScript; the runtime stage
# holds only the compiled server, package.json (for "type": "module"), the demo data and the
# PostgreSQL driver. halserve has no runtime dependencies; the driver (`postgres`, an optional peer
# dependency with no dependencies of its own) is the one package in /app/node_modules, so that
# `--store postgres://…` and `halserve import|export` work in the image.
#
#   docker run --rm halserve import --from /app/demo --to postgres://…
#   docker exec <container> halserve backup --data /data --to /tmp/backup

ARG NODE_IMAGE=node:22-slim

FROM ${NODE_IMAGE} AS build
ENV NPM_CONFIG_UPDATE_NOTIFIER=false
WORKDIR /src
# Manifests first, so that the dependency layer is reused while only src/ changes.
# --ignore-scripts: `prepare` would run the build now, before the sources are copied.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# Type declarations are for library users of the npm package, not for the running server. The CLI
# is made executable as npm makes a package's `bin` on install (tsc writes 644); COPY keeps the mode.
RUN npm run build && find dist -name '*.d.ts' -delete && chmod 755 dist/cli.js

FROM ${NODE_IMAGE}
# Configuration is only through HALSERVE_* variables; these are the container's defaults.
# Listening on 0.0.0.0 means the server refuses to start until HALSERVE_TOKENS (or
# HALSERVE_NO_AUTH=1) is set: a container is never served without authentication by accident.
ENV NODE_ENV=production \
    HALSERVE_HOST=0.0.0.0 \
    HALSERVE_PORT=8080 \
    HALSERVE_DATA=/data
WORKDIR /app
# Application files stay owned by root: the server's user can read them, never change them.
COPY package.json ./
COPY --from=build /src/dist ./dist
# The version package-lock.json pins; `npm ci --omit=dev` would leave it out (a peer dependency).
COPY --from=build /src/node_modules/postgres ./node_modules/postgres
COPY data ./demo
COPY docker/entrypoint.sh docker/healthcheck.js ./docker/
# `halserve` on the PATH, for `docker exec <ctr> halserve backup …`: package.json's `bin`, linked
# as `npm install -g` links it. No shell wrapper: the kernel runs the shebang of src/cli.ts, which
# gives node the flags the entrypoint gives it (test/cli/node-flags.test.ts keeps them equal), and
# the arguments reach the CLI as given. node follows the link, so /app/package.json still applies.
# The volume's mount point belongs to the non-root user before VOLUME, so that a new named
# volume is created with that owner.
RUN ln -s /app/dist/cli.js /usr/local/bin/halserve && mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
# The server stops accepting, finishes requests in flight and syncs its store on SIGTERM.
STOPSIGNAL SIGTERM
# Node itself, since slim images have no curl or wget.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "/app/docker/healthcheck.js"]
# `sh` execs node, so node is PID 1 and receives the stop signal itself.
ENTRYPOINT ["/bin/sh", "/app/docker/entrypoint.sh"]
CMD []
