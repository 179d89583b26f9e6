#!/bin/sh
# `make image`: build the speakstream image (IMAGE, default speakstream:latest) and say how long
# it took and how big it is. BASE picks the base image (default python:3.11-slim-bookworm, pulled
# from a registry). Where no registry can be reached, as on a closed build machine, a base is made
# from Debian's packages instead (mmdebstrap: Debian bookworm with its Python 3.11).
# EXTRA_BUILD_ARGS go to `docker build` as they are (e.g. --build-arg ONNXRUNTIME=onnxruntime-gpu).
set -eu
IMAGE="${IMAGE:-speakstream:latest}"
BASE="${BASE:-}"
CA="${CA:-/etc/ssl/certs/ca-certificates.crt}"
LOCAL_BASE=local/python:3.11-bookworm

ensure_daemon() {
    docker info >/dev/null 2>&1 && return
    if command -v dockerd >/dev/null && [ "$(id -u)" = 0 ]; then
        echo "starting dockerd (host network only)" >&2
        nohup dockerd --bridge=none --iptables=false --ip-masq=false >/tmp/dockerd.log 2>&1 &
        for _ in $(seq 60); do docker info >/dev/null 2>&1 && return; sleep 1; done
    fi
    echo "no Docker daemon: start one (or install docker.io)" >&2
    exit 1
}

choose_base() {
    [ -n "$BASE" ] && return
    BASE=python:3.11-slim-bookworm
    docker image inspect "$BASE" >/dev/null 2>&1 && return
    timeout 120 docker pull -q "$BASE" >/dev/null 2>&1 && return
    echo "cannot pull $BASE: using $LOCAL_BASE, made from Debian's packages" >&2
    if ! docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then
        mmdebstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm - \
            | docker import - "$LOCAL_BASE"
    fi
    BASE="$LOCAL_BASE"
}

ensure_daemon
choose_base
rm -f deploy/container/extra-ca/ca.crt
[ -s "$CA" ] && cp "$CA" deploy/container/extra-ca/ca.crt
trap 'rm -f deploy/container/extra-ca/ca.crt' EXIT
started=$(date +%s)
# shellcheck disable=SC2086  # the optional arguments are words
docker build --network host --build-arg BASE="$BASE" ${EXTRA_BUILD_ARGS:-} -t "$IMAGE" .
ended=$(date +%s)
size=$(docker image inspect "$IMAGE" --format '{{.Size}}')
echo "built $IMAGE from $BASE in $((ended - started)) s; image size $((size / 1000000)) MB"
