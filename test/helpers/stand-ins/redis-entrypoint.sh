#!/bin/sh
# The official image's entrypoint: options alone run redis-server; it runs as the redis user; without a
# configuration file, protected mode is off, so other containers may connect (the image's documented default).
set -eu
if [ "${1#-}" != "$1" ]; then set -- redis-server "$@"; fi
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi
if [ "$1" = redis-server ]; then
  case "${2:-}" in
    *.conf) ;;
    *) set -- "$@" --protected-mode no ;;
  esac
fi
exec "$@"
