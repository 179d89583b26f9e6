# speakstream server image, to the SageMaker bring-your-own-container contract: `docker run IMAGE
# serve` listens on 8080 with GET /ping, POST /invocations and WS /invocations-bidirectional-stream
# (and every other route). The model, voices and the weights optimised for the build machine's CPU
# are made at build time, so a container is ready as soon as the engine has loaded. It runs on a
# read-only root: what it keeps (pronunciation dictionaries) goes to the volume at /data
# (SPEAKSTREAM_DATA_DIR); on a node whose CPU differs from the build machine's, the optimised
# weights are made at start in /data or /tmp (the log and /ping say which).
#
#   CPU:  docker build -t speakstream .
#   CUDA: docker build -t speakstream:cuda \
#           --build-arg BASE=nvidia/cuda:13.0.1-cudnn-runtime-ubuntu24.04 --build-arg ONNXRUNTIME=onnxruntime-gpu .
#
# BASE is any Debian/Ubuntu image; one without Python gets the distribution's (3.11 or newer).
# EXTRAS adds optional extras, e.g. `--build-arg EXTRAS=languages` for Chinese and Japanese.
# Behind a TLS-inspecting proxy, put its CA bundle at deploy/container/extra-ca/ca.crt before the
# build (`make image` does; the file stays in the build stage, never in the image).
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS python
ENV DEBIAN_FRONTEND=noninteractive
RUN if ! python3 -c "import ensurepip, venv" 2>/dev/null; then \
        apt-get update \
        && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi

FROM python AS build
ARG ONNXRUNTIME=onnxruntime
ARG EXTRAS=
RUN python3 -m venv /opt/speakstream
ENV PATH=/opt/speakstream/bin:$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    SPEAKSTREAM_CACHE_DIR=/opt/speakstream/assets
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
COPY deploy/container/extra-ca ./extra-ca
RUN if [ -s extra-ca/ca.crt ]; then export PIP_CERT=$PWD/extra-ca/ca.crt SSL_CERT_FILE=$PWD/extra-ca/ca.crt; fi \
    && pip install ".${EXTRAS:+[$EXTRAS]}" \
    && if [ "$ONNXRUNTIME" != onnxruntime ]; then \
        pip uninstall -y onnxruntime && pip install "$ONNXRUNTIME"; \
    fi \
    && speakstream assets fetch \
    && speakstream assets verify

FROM python
ARG BASE
ARG ONNXRUNTIME=onnxruntime
LABEL org.opencontainers.image.title="speakstream" \
      org.opencontainers.image.description="Low-latency streaming speech (Kokoro-82M) for AI voice agents" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${BASE}" \
      com.amazonaws.sagemaker.capability.bidirectional-streaming="true" \
      com.amazonaws.sagemaker.capabilities.accept-bind-to-port="true" \
      io.speakstream.onnxruntime="${ONNXRUNTIME}"
RUN groupadd --system --gid 10001 speakstream \
    && useradd --system --uid 10001 --gid speakstream --home-dir /home/speakstream --create-home speakstream \
    && install -d -o speakstream -g speakstream /data
COPY --from=build /opt/speakstream /opt/speakstream
COPY deploy/container/serve /usr/local/bin/serve
# SPEAKSTREAM_INSECURE: the container trusts its network (a SageMaker endpoint authenticates its
# callers itself, and strips other headers). Set SPEAKSTREAM_API_KEY to require a key.
ENV PATH=/opt/speakstream/bin:$PATH \
    SPEAKSTREAM_CACHE_DIR=/opt/speakstream/assets \
    SPEAKSTREAM_HOST=0.0.0.0 \
    SPEAKSTREAM_PORT=8080 \
    SPEAKSTREAM_INSECURE=true \
    SPEAKSTREAM_DATA_DIR=/data \
    PYTHONUNBUFFERED=1
VOLUME /data
USER speakstream
WORKDIR /home/speakstream
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"SPEAKSTREAM_PORT\", \"8080\")}/ping', timeout=2)"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/serve"]
CMD ["serve"]
