# seqgate: the bridge and the worker in one image.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY seqgate ./seqgate
RUN pip install --no-cache-dir .

# RocksDB state lives here; mount a volume to keep it across restarts
# (without one the worker simply restores from the changelog topic).
ENV SEQGATE_STATE_DIR=/var/lib/seqgate/state
VOLUME ["/var/lib/seqgate"]

ENTRYPOINT ["seqgate"]
CMD ["--help"]
