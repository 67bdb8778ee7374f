# seqgate: the bridges, the worker and the dispatcher in one image.
#
# Two stages: the first builds seqgate (its compiled core seqgate._core with Rust from
# the official rust image, linked by gcc) and installs it with its runtime dependencies
# (wheels only) into a virtual environment: the development tools (devtools/: the bench
# and its peers, the development broker, the demo, matplotlib) are not copied in; the second is a clean python:3.11-slim with that environment copied in,
# running as uid/gid 10001: no compiler, no toolchain.

FROM rust:1.95-slim AS rust

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo PATH=/usr/local/cargo/bin:$PATH
COPY --from=rust /usr/local/rustup /usr/local/rustup
COPY --from=rust /usr/local/cargo /usr/local/cargo
RUN apt-get update && apt-get install --yes --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/seqgate
WORKDIR /src
COPY pyproject.toml README.md ./
COPY core ./core
COPY seqgate ./seqgate
RUN /opt/seqgate/bin/pip install --only-binary=:all: --no-binary=seqgate . \
 && /opt/seqgate/bin/pip uninstall --yes pip setuptools

FROM python:3.11-slim
RUN groupadd --system --gid 10001 seqgate \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/seqgate --no-create-home \
      --shell /usr/sbin/nologin seqgate \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/seqgate /var/lib/seqgate/state
COPY --from=build /opt/seqgate /opt/seqgate
ENV PATH=/opt/seqgate/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SEQGATE_STATE_DIR=/var/lib/seqgate/state
# RocksDB state (and the dispatcher's default SQLite file) live here; mount a volume to
# keep them across restarts (without one the worker restores from its changelog topic).
WORKDIR /var/lib/seqgate
VOLUME ["/var/lib/seqgate"]
USER 10001:10001

ENTRYPOINT ["seqgate"]
CMD ["--help"]
