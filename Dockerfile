# kioku: the MCP gateway and the job workers share this image (compose.yaml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    KIOKU_DATA_DIR=/data

WORKDIR /app
COPY pyproject.toml README.md ./
COPY mcp_gateway ./mcp_gateway
COPY workers ./workers
RUN pip install ".[postgres,qdrant]" \
    && useradd --create-home --uid 10001 kioku \
    && mkdir -p /data && chown kioku:kioku /data

USER kioku
VOLUME ["/data"]
EXPOSE 8765
ENTRYPOINT ["kioku"]
CMD ["serve", "--http", "--host", "0.0.0.0", "--port", "8765"]
