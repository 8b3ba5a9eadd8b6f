# The esbridge HTTP sidecar (docs/service.md). Build from the repository root:
#   docker build -f docker/sidecar.Dockerfile -t esbridge-sidecar .
# Inside the container it listens on 0.0.0.0:8088 on purpose: the container's network namespace is the
# boundary, so who can reach the port is decided where it is published (compose binds it to 127.0.0.1).
# Since that is not loopback, searches and /metrics need an API key as writes do: run it with
# ESBRIDGE_API_KEYS (or a keys file, mode 600, in ESBRIDGE_SERVICE__API_KEYS_FILE); without any key it
# refuses to start unless ESBRIDGE_SERVICE__OPEN_READS=true says the network in front of it is trusted.
# Its access log is one JSON object per line on stderr (docs/service.md).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HOME=/opt/esbridge/hf \
    ESBRIDGE_MODELS_DIR=/opt/esbridge/models \
    ESBRIDGE_EMBEDDING__CACHE_DIR=/var/lib/esbridge/embeddings \
    ESBRIDGE_DATA_DIR=/var/lib/esbridge/data

WORKDIR /src
COPY pyproject.toml README.md ./
COPY esbridge ./esbridge
# The default model (bge-small-en-v1.5, ONNX int8) is fetched and quantized into the image's model folder
# at build time, so the container needs no download at start-up.
RUN pip install ".[service]" && rm -rf /src \
    && python -c "from esbridge.embeddings.model_store import locate_onnx; locate_onnx('BAAI/bge-small-en-v1.5', 'int8')"

RUN useradd --system --uid 10001 --home-dir /var/lib/esbridge --create-home esbridge \
    && mkdir -p /opt/esbridge/hf && chown esbridge /opt/esbridge/hf
USER esbridge
WORKDIR /var/lib/esbridge

EXPOSE 8088
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8088/healthz', timeout=4)"]
ENTRYPOINT ["esbridge"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8088"]
